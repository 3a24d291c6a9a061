"""What the REST API answers, as pure functions over the job model.

The handlers fetch through the job manager and shape the answer here, so the JSON
contract (docs/rest-api.md) lives in one small module that tests can read without a
server. No I/O.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from jupyter_ddl.core.failures import diagnose, outcomes
from jupyter_ddl.core.metrics import parse_metric_line
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.i18n import tr
from jupyter_ddl.models import Capabilities, JobSpec, JobState, JobStatus, LogLine
from jupyter_ddl.present.clip import MAX_MESSAGE, clip

if TYPE_CHECKING:
    from jupyter_ddl.manager import JobList


def parse_states(raw: str | None) -> set[JobState] | None:
    """``state=Running,Pending`` → the states asked for; None when not filtered.

    Raises ValidationError naming the unknown state and the valid ones."""
    if not raw:
        return None
    by_name = {s.value.lower(): s for s in JobState}
    out = set()
    for part in (p.strip() for p in raw.split(",")):
        if not part:
            continue
        if part.lower() not in by_name:
            valid = ", ".join(s.value for s in JobState)
            said = tr(
                "unknown job state {state}; use one of: {valid}", state=_shown(part), valid=valid
            )
            raise ValidationError(f"state: {said}")
        out.add(by_name[part.lower()])
    return out or None


#: the largest integer a query argument may be: line counts and offsets beyond it are
#: typos, and would overflow where they become C sizes
MAX_QUERY_INT = 10**9


def parse_int(raw: str | None, name: str, *, default: int | None, minimum: int = 0) -> int | None:
    """A non-negative integer query argument up to ``MAX_QUERY_INT``; raises
    ValidationError (a 400) on anything else."""
    if raw is None or raw == "":
        return default
    ok = raw.isascii() and raw.isdigit() and len(raw) <= 12  # no sign, no decimals
    value = int(raw) if ok else None
    if value is None or not minimum <= value <= MAX_QUERY_INT:
        said = tr(
            "expected an integer from {minimum} to {maximum}, got {raw}",
            minimum=minimum, maximum=MAX_QUERY_INT, raw=_shown(raw),
        )  # fmt: skip
        raise ValidationError(f"{name}: {said}")
    return value


def _shown(raw: str) -> str:
    """A query argument as an error message quotes it: its first 40 characters."""
    return repr(raw) if len(raw) <= 40 else f"{raw[:40]!r}... ({len(raw)} characters)"


def parse_bool(raw: str | None) -> bool:
    return (raw or "").lower() in ("1", "true", "yes", "on")


def elapsed(status: JobStatus, now: float | None = None) -> float | None:
    """Seconds the job has run (until it finished), None before it started."""
    start = status.started or status.created
    if start is None:
        return None
    end = status.finished if status.state.finished and status.finished else None
    return max(0.0, (end or now or time.time()) - start)


def job_summary(status: JobStatus, now: float | None = None) -> dict[str, Any]:
    """One row of the job list (what the sidebar shows)."""
    return {
        "name": status.name,
        "backend": status.backend,
        "namespace": status.namespace,
        "strategy": status.strategy,
        "state": status.state.value,
        "finished": status.state.finished,
        "ready": status.ready,
        "total": len(status.replicas),
        "created": status.created,
        "started": status.started,
        "ended": status.finished,
        "elapsed": elapsed(status, now),
        "notebook": status.notebook,
        "cell_id": status.cell_id,
        "message": clip(status.message, MAX_MESSAGE, "GET .../logs has every line")
        if status.message
        else status.message,
        "metrics": dict(status.metrics),
    }


def job_list(
    listing: JobList, states: set[JobState] | None = None, now: float | None = None
) -> dict[str, Any]:
    """The job list: rows (filtered by ``states``) plus ``unavailable``, one entry per
    backend that could not be asked (``{"backend", "error", "message"}``)."""
    return {
        "jobs": [job_summary(j, now) for j in listing.jobs if states is None or j.state in states],
        "unavailable": [u.to_dict() for u in listing.unavailable],
    }


def spec_summary(spec: JobSpec | None) -> dict[str, Any] | None:
    """The parts of the spec worth showing. Env values and commands are left out:
    they may carry secrets, and the UI has no use for them."""
    if spec is None:
        return None
    return {
        "strategy": spec.strategy,
        "replicas": dict(spec.replicas),
        "image": spec.image,
        "resources": {role: asdict(spec.resources_for(role)) for role in spec.replicas},
        "dist_backend": spec.dist_backend,
        "nproc_per_node": spec.nproc_per_node,
        "target": spec.target,
        "queue": spec.gang.queue if spec.gang else None,
        "gang": spec.gang is not None,
        "env_names": sorted(spec.env),
        "user": spec.user,
    }


def job_detail(
    status: JobStatus, spec: JobSpec | None, caps: Capabilities | None, now: float | None = None
) -> dict[str, Any]:
    """The job view: summary, replica table (with rank and resources), the root cause
    of a failure (``failures.diagnose``), restarts against the backoff limit, spec
    summary and what may be done."""
    replicas = status.to_dict()["replicas"]
    return {
        **job_summary(status, now),
        "code_digest": status.code_digest,
        "replicas": replicas,
        "restarts": status.restarts,
        "backoff_limit": status.backoff_limit,
        "root_cause": diagnose(outcomes(status.replicas)).to_dict(),
        "spec": spec_summary(spec),
        "actions": {
            "cancel": bool(caps.cancel) if caps else True,
            "delete": bool(caps.delete) if caps else True,
            "follow_logs": bool(caps.follow_logs) if caps else True,
        },
    }


def capabilities_dict(caps: Capabilities) -> dict[str, Any]:
    d = asdict(caps)
    d["strategies"] = list(caps.strategies)
    return d


def log_dict(line: LogLine) -> dict[str, Any]:
    return asdict(line)


def next_offsets(lines: Iterable[LogLine], start: int) -> dict[str, int]:
    """Per replica, the offset to ask for next time (one past the last line seen)."""
    out: dict[str, int] = {}
    for line in lines:
        out[line.replica] = max(out.get(line.replica, start), line.offset + 1)
    return out


def metric_points(lines: Iterable[LogLine]) -> list[dict[str, Any]]:
    """Metric points parsed from log lines with the shared parser; a point without a
    step gets its log offset so the chart still has an x value. ``source`` says
    which kind of line it came from (``metrics.SOURCES``)."""
    points = []
    for line in lines:
        m = parse_metric_line(line.text)
        if m is None:
            continue
        step = m.step if m.step is not None else line.offset
        points.append({"step": step, "offset": line.offset, "values": m.values, "source": m.source})
    return points


def default_metrics_replica(status: JobStatus) -> str | None:
    """The replica whose log carries the metrics: chief/master/launcher, else the first."""
    for role in ("Chief", "Master", "Launcher", "Node", "Worker"):
        for r in status.replicas:
            if r.role == role:
                return r.id
    return status.replicas[0].id if status.replicas else None
