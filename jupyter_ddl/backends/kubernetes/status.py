"""Job objects and pods -> JobStatus / ReplicaStatus (pure, over camelCase dicts).

Kinds differ in how pods are labelled (operator-contract.md §1.4 v1 operators, §3.4 mpi-operator,
§4.2 JobSet) and how a job ends (§1.5, §3.4: ``Succeeded``/``Failed`` conditions;
§4.4: ``Complete``/``Failed``, no Running condition).
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ... import failures
from ...manifests import (
    ANNOTATION_CELL,
    ANNOTATION_CODE_DIGEST,
    ANNOTATION_NOTEBOOK,
    LABEL_STRATEGY,
    PREFIX,
)
from ...models import ROLES, JobState, JobStatus, ReplicaState, ReplicaStatus
from ...shape import replica_ranks
from .reasons import pod_waiting

TK = "training.kubeflow.org/"
JS = "jobset.sigs.k8s.io/"
ANNOTATION_CANCELLED = PREFIX + "cancelled"
ANNOTATION_WARNINGS = PREFIX + "warnings"
REPLICA_MAPS = {
    "TFJob": "tfReplicaSpecs",
    "PyTorchJob": "pytorchReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
}
_ROLE = {r.lower(): r for r in ROLES}


def pod_selector(kind: str, job: str) -> str:
    """The label selector of a job's pods (what the Kubeflow SDKs use too)."""
    if kind == "TrainJob":
        return f"{JS}jobset-name={job}"
    return f"{TK}job-name={job}"


def expected_replicas(kind: str, obj: dict[str, Any]) -> list[tuple[str, int]]:
    spec = obj.get("spec") or {}
    if kind == "TrainJob":
        nodes = int((spec.get("trainer") or {}).get("numNodes") or 1)
        return [("Node", i) for i in range(nodes)]
    maps = spec.get(REPLICA_MAPS.get(kind, ""), {}) or {}
    out = []
    for role in sorted(maps, key=lambda r: ROLES.index(r) if r in ROLES else len(ROLES)):
        out += [(role, i) for i in range(int((maps[role] or {}).get("replicas", 1)))]
    return out


def pod_replica(kind: str, pod: dict[str, Any]) -> tuple[str, int] | None:
    """(role, index) of one of the job's pods, from the operator's labels."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if kind == "TrainJob":
        role = labels.get(f"{JS}replicatedjob-name", "node")
        idx = labels.get("batch.kubernetes.io/job-completion-index") or (
            (pod.get("metadata") or {}).get("annotations") or {}
        ).get("batch.kubernetes.io/job-completion-index", "0")
        return _ROLE.get(role, role.capitalize()), int(idx)
    rtype = labels.get(f"{TK}replica-type") or labels.get(f"{TK}job-role")
    if not rtype:
        return None
    if kind == "MPIJob" and rtype == "launcher":
        return "Launcher", 0
    return _ROLE.get(rtype, rtype.capitalize()), int(labels.get(f"{TK}replica-index", "0"))


def replica_status(role: str, index: int, pod: dict[str, Any] | None) -> ReplicaStatus:
    rs = ReplicaStatus(role=role, index=index)
    if pod is None:
        return rs
    rs.pod = pod["metadata"]["name"]
    st = pod.get("status") or {}
    phase = st.get("phase", "Pending")
    cs = (st.get("containerStatuses") or [{}])[0]
    rs.restarts = int(cs.get("restartCount") or 0)
    state = cs.get("state") or {}
    term = state.get("terminated") or (
        (cs.get("lastState") or {}).get("terminated") if phase == "Failed" else None
    )
    if term:
        rs.exit_code = term.get("exitCode")
        sig = term.get("signal")
        rs.signal = int(sig) if sig else None
    ended = term or (cs.get("lastState") or {}).get("terminated")
    if ended:  # the failure order the root cause is read from
        rs.ended = _epoch(ended.get("finishedAt"))
    rs.message = pod_waiting(pod)
    if phase == "Succeeded":
        rs.state = ReplicaState.SUCCEEDED
    elif phase == "Failed":
        rs.state = ReplicaState.FAILED
        rs.message = rs.message or (term or {}).get("reason") or st.get("reason")
    elif phase == "Running":
        waiting = state.get("waiting")
        rs.state = ReplicaState.RESTARTING if waiting and rs.restarts else ReplicaState.RUNNING
    return rs


def _epoch(ts: str | None) -> float | None:
    """Epoch seconds of an RFC 3339 time, with its fraction when it has one."""
    if not ts:
        return None
    try:
        whole = float(calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None
    frac = ts[19:].rstrip("Z").split("+")[0]
    return whole + (float(frac) if frac.startswith(".") and frac[1:].isdigit() else 0.0)


def _true(conds: list[dict[str, Any]], ctype: str) -> dict[str, Any] | None:
    return next((c for c in conds if c.get("type") == ctype and c.get("status") == "True"), None)


def job_state(
    kind: str, obj: dict[str, Any], replicas: list[ReplicaStatus]
) -> tuple[JobState, str | None]:
    status = obj.get("status") or {}
    conds = status.get("conditions") or []
    notes = (obj.get("metadata") or {}).get("annotations") or {}
    for ctype, state in (
        ("Succeeded", JobState.SUCCEEDED),
        ("Complete", JobState.SUCCEEDED),
        ("Failed", JobState.FAILED),
    ):
        c = _true(conds, ctype)
        if c:
            return state, c.get("message")
    if notes.get(ANNOTATION_CANCELLED) == "true":
        return JobState.CANCELLED, "cancelled"
    last = next((c for c in reversed(conds) if c.get("status") == "True"), None)
    if last and last["type"] == "Restarting":
        return JobState.RESTARTING, last.get("message")
    if last and last["type"] == "Running":
        return JobState.RUNNING, last.get("message")
    if last and last["type"] == "Suspended":
        return JobState.PENDING, last.get("message")
    if replicas and all(
        r.state in (ReplicaState.RUNNING, ReplicaState.SUCCEEDED) for r in replicas
    ):
        return JobState.RUNNING, None  # TrainJob has no Running condition (§4.4)
    if last and last["type"] == "Created":
        return JobState.CREATED, last.get("message")
    return JobState.PENDING, None


def job_status(
    kind: str,
    obj: dict[str, Any],
    pods: list[dict[str, Any]],
    namespace: str | None = None,
    last_lines: Mapping[str, Sequence[str]] | None = None,
) -> JobStatus:
    """The JobStatus of a job object and the pods found with ``pod_selector``;
    ``last_lines`` (replica id -> its last log lines, from a watch) lets a failure's
    message name the exception of its root cause."""
    md = obj.get("metadata") or {}
    by_id: dict[tuple[str, int], dict[str, Any]] = {}
    for p in pods:
        key = pod_replica(kind, p)
        if key:
            by_id[key] = p
    keys = expected_replicas(kind, obj)
    keys += [k for k in by_id if k not in keys]
    replicas = [replica_status(r, i, by_id.get((r, i))) for r, i in keys]
    counts: dict[str, int] = {}
    for role, _ in keys:
        counts[role] = counts.get(role, 0) + 1
    ranks = replica_ranks(kind, (md.get("labels") or {}).get(LABEL_STRATEGY, ""), counts)
    for r in replicas:
        r.rank = ranks.get((r.role, r.index))
        r.last_lines = list((last_lines or {}).get(r.id, ()))
    state, message = job_state(kind, obj, replicas)
    if state == JobState.CANCELLED:
        for r in replicas:
            if not r.state.finished:
                r.state = ReplicaState.TERMINATED
    if state == JobState.FAILED:
        found = failures.diagnose(failures.outcomes(replicas))
        if found.root is not None:  # the root cause first, then the operator's reason
            message = found.line + (f" — {message}" if message else "")
    st = obj.get("status") or {}
    notes = md.get("annotations") or {}
    return JobStatus(
        name=md.get("name", ""),
        backend="kubernetes",
        strategy=(md.get("labels") or {}).get(LABEL_STRATEGY, ""),
        state=state,
        replicas=replicas,
        message=message,
        created=_epoch(md.get("creationTimestamp")),
        started=_epoch(st.get("startTime")),
        finished=_epoch(st.get("completionTime")),
        namespace=md.get("namespace") or namespace,
        notebook=notes.get(ANNOTATION_NOTEBOOK),
        code_digest=notes.get(ANNOTATION_CODE_DIGEST),
        cell_id=notes.get(ANNOTATION_CELL),
        backoff_limit=_backoff_limit(obj),
    )


def _backoff_limit(obj: dict[str, Any]) -> int | None:
    """runPolicy.backoffLimit of a Kubeflow v1 job or MPIJob (a TrainJob's lives in
    its JobSet: not shown)."""
    limit = ((obj.get("spec") or {}).get("runPolicy") or {}).get("backoffLimit")
    return int(limit) if isinstance(limit, int) else None
