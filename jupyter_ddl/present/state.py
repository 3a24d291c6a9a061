"""The dashboard's model (pure): a job's event stream folded into bounded buffers.

Every view (widgets, the text/HTML fallback, the saved record, ``%ddl status``)
renders from one ``DashboardState``; the state never grows without bound: ``tail`` log
lines per replica and in the merged view, ``max_points`` metric points per series
(halved by dropping every other point when full, so the whole run stays visible).
Metric series are kept per (metric, source): a ``report()`` loss and a Keras progress
loss are different series (see ``chart.py``).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from jupyter_ddl.core import failures
from jupyter_ddl.core.stream import NOTE_STREAM, internal_note
from jupyter_ddl.i18n import tr
from jupyter_ddl.models import EventKind, JobEvent, JobState, JobStatus, ReplicaStatus
from jupyter_ddl.present.chart import Point
from jupyter_ddl.present.clip import clip

#: one colour per replica, by its place in the job (the lab's job view uses the same,
#: labextension/style/base.css): lines and swatches at 3:1 or more on white and on the
#: dark theme's #111 and #212121; no red, which says a failure
PALETTE = (
    "#1f77b4", "#bf7326", "#2ca02c", "#9467bd", "#138d90", "#c2489b", "#8f8f2a", "#7f7f7f",
)  # fmt: skip

Series = list[Point]  # (step, value)
SeriesKey = tuple[str, str]  # (metric, source)


@dataclass
class ReplicaView:
    id: str  # "worker-1"
    color: str
    state: str = "Pending"
    rank: int | None = None
    restarts: int = 0
    exit_code: int | None = None
    signal: int | None = None
    ended: float | None = None
    message: str | None = None
    lines: deque[str] = field(default_factory=deque)
    line_count: int = 0  # every line received, kept or not
    teardown_from: int | None = None  # line number where a cancel's teardown begins
    metrics: dict[SeriesKey, Series] = field(default_factory=dict)
    latest: dict[str, float] = field(default_factory=dict)
    resources: dict[str, float] = field(default_factory=dict)
    metric_events: int = 0

    @property
    def label(self) -> str:
        """``worker-0 · rank 1``."""
        return self.id if self.rank is None else f"{self.id} · rank {self.rank}"

    def numbered(self) -> list[tuple[int, str]]:
        """The kept lines with their line numbers (teardown is ``>= teardown_from``)."""
        first = self.line_count - len(self.lines)
        return list(enumerate(self.lines, first))


class DashboardState:
    """Folds JobEvents (``apply``) into what the dashboard shows; ``version`` changes
    whenever something visible changed, so a view re-renders only then."""

    def __init__(self, name: str, *, tail: int = 200, max_points: int = 400) -> None:
        self.name = name
        self.tail = max(1, tail)
        self.max_points = max(4, max_points)
        self.strategy = ""
        self.backend = ""
        self.state = JobState.PENDING.value
        self.message: str | None = None
        self.error: str | None = None  # the watch itself failed (backend gone...)
        self.detached = False
        self.created: float | None = None
        self.started: float | None = None
        self.finished_at: float | None = None
        self.first_seen = time.time()
        self.notebook: str | None = None
        self.cell_id: str | None = None
        self.backoff_limit: int | None = None
        self.image: str | None = None
        self.image_pushed: bool | None = None
        self.warnings: list[str] = []
        self.replicas: dict[str, ReplicaView] = {}
        self.merged: deque[tuple[str, str]] = deque(maxlen=self.tail)
        self.version = 0
        self.events = 0

    @classmethod
    def of_status(cls, status: JobStatus) -> DashboardState:
        """The state a status alone gives (``%ddl status``, ``%ddl wait``): no stream, so
        each replica's last lines are what its status carries."""
        st = cls(status.name)
        st.apply(JobEvent(EventKind.STATUS, status.name, status=status))
        for rs in status.replicas:
            for text in rs.last_lines:
                st._line(st.replica(rs.id), text)
        return st

    # -- folding ---------------------------------------------------------------------------
    def apply(self, event: JobEvent) -> None:
        """Fold one event in. Unknown kinds are ignored (newer backends)."""
        self.events += 1
        handler = _HANDLERS.get(event.kind)
        if handler is not None:
            handler(self, event)
            self.version += 1

    def replica(self, rid: str) -> ReplicaView:
        view = self.replicas.get(rid)
        if view is None:
            color = PALETTE[len(self.replicas) % len(PALETTE)]
            view = ReplicaView(rid, color, lines=deque(maxlen=self.tail))
            self.replicas[rid] = view
        return view

    def _status(self, event: JobEvent) -> None:
        st = event.status
        if st is None:
            return
        self.strategy, self.backend = st.strategy, st.backend
        self.state, self.message = st.state.value, st.message
        self.created, self.started = st.created, st.started
        self.finished_at = st.finished
        self.notebook, self.cell_id = st.notebook, st.cell_id
        self.backoff_limit = st.backoff_limit
        self.image, self.image_pushed, self.warnings = st.image, st.image_pushed, st.warnings
        for i, rs in enumerate(st.replicas):
            self._replica_status(rs)
            # by its place in the job, not by which replica spoke first: the same
            # colour in every cell, record and the lab's job view
            self.replicas[rs.id].color = PALETTE[i % len(PALETTE)]

    def _replica(self, event: JobEvent) -> None:
        if event.replica_status is not None:
            self._replica_status(event.replica_status)

    def _replica_status(self, rs: ReplicaStatus) -> None:
        view = self.replica(rs.id)
        view.state, view.restarts = rs.state.value, rs.restarts
        view.exit_code, view.signal, view.message = rs.exit_code, rs.signal, rs.message
        view.rank = rs.rank if rs.rank is not None else view.rank
        view.ended = rs.ended if rs.ended is not None else view.ended
        if rs.metrics and not view.latest:  # a status alone (``%ddl status``): no stream
            view.latest.update(rs.metrics)
        if rs.resources:
            view.resources.update(rs.resources)

    def _log(self, event: JobEvent) -> None:
        line = event.log
        if line is None:
            return
        if internal_note(line.stream, line.text):
            return
        view = self.replica(line.replica)
        if line.stream == NOTE_STREAM and line.text.startswith(failures.CANCEL_MARKER):
            view.teardown_from = view.line_count + 1
        self._line(view, line.text)

    def _line(self, view: ReplicaView, text: str) -> None:
        whole = tr(
            "`%ddl logs {name} --replica {replica}` shows the line", name=self.name, replica=view.id
        )
        text = clip(text, whole=whole)
        view.line_count += 1
        view.lines.append(text)
        self.merged.append((view.id, text))

    def _metric(self, event: JobEvent) -> None:
        if not event.replica or not event.metrics:
            return
        view = self.replica(event.replica)
        view.metric_events += 1
        step = float(event.step) if event.step is not None else float(view.metric_events)
        source = event.source or "log"
        for key, value in event.metrics.items():
            series = view.metrics.setdefault((key, source), [])
            series.append((step, float(value)))
            if len(series) > self.max_points:
                # keep the shape of the whole run (first and last point too) in bounded memory
                series[:] = series[::2] if len(series) % 2 else [*series[::2], series[-1]]
            if source == "report" or key not in view.latest or (key, "report") not in view.metrics:
                view.latest[key] = float(value)  # report() wins over a parsed line

    def _resource(self, event: JobEvent) -> None:
        if event.replica and event.metrics:
            self.replica(event.replica).resources.update(event.metrics)

    def _waiting(self, event: JobEvent) -> None:
        if event.replica:
            self.replica(event.replica).message = event.message
        else:
            self.message = event.message

    # -- reading ---------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        return JobState(self.state).finished

    @property
    def restarts(self) -> int:
        return sum(v.restarts for v in self.replicas.values())

    def elapsed(self, now: float | None = None) -> float:
        start = self.started or self.created or self.first_seen
        end = self.finished_at if self.finished and self.finished_at else (now or time.time())
        return max(0.0, end - start)

    def charts(self) -> dict[SeriesKey, dict[str, Series]]:
        """(metric, source) → replica id → points, for the charts."""
        out: dict[SeriesKey, dict[str, Series]] = {}
        for rid, v in self.replicas.items():
            for key, points in v.metrics.items():
                out.setdefault(key, {})[rid] = list(points)
        return out

    def colors(self) -> dict[str, str]:
        return {rid: v.color for rid, v in self.replicas.items()}

    def labels(self) -> dict[str, str]:
        return {rid: v.label for rid, v in self.replicas.items()}

    def latest_metric(self, rid: str) -> str:
        """``loss=0.41`` for the replica table: loss first, else any metric."""
        latest = self.replicas[rid].latest
        if not latest:
            return ""
        key = "loss" if "loss" in latest else sorted(latest)[0]
        return f"{key}={latest[key]:.4g}"

    def diagnosis(self) -> failures.Diagnosis:
        """The root cause of a failure and its consequences (``failures.diagnose``)."""
        return failures.diagnose(
            [
                failures.ReplicaOutcome(
                    id=v.id,
                    state=v.state,
                    rank=v.rank,
                    ended=v.ended,
                    lines=[
                        t for n, t in v.numbered() if v.teardown_from is None or n < v.teardown_from
                    ],
                    exit_code=v.exit_code,
                    signal=v.signal,
                    message=v.message,
                    order=i,
                )  # fmt: skip
                for i, v in enumerate(self.replicas.values())
            ]
        )


_HANDLERS = {
    EventKind.STATUS: DashboardState._status,
    EventKind.REPLICA: DashboardState._replica,
    EventKind.LOG: DashboardState._log,
    EventKind.METRIC: DashboardState._metric,
    EventKind.RESOURCE: DashboardState._resource,
    EventKind.WAITING: DashboardState._waiting,
}


def format_start(when: float | None, now: float | None = None) -> str:
    """``14:05 UTC`` (today), else ``3 Nov 14:05 UTC``: when a job started, in the
    kernel's local time with its zone named (a notebook server's clock may not be the
    reader's), for beside its duration."""
    if when is None:
        return ""
    at, today = time.localtime(when), time.localtime(now if now is not None else time.time())
    same_day = at[:3] == today[:3]
    text = time.strftime("%H:%M %Z" if same_day else "%d %b %H:%M %Z", at).strip()
    return text.lstrip("0") if not same_day else text


def format_elapsed(seconds: float) -> str:
    s = int(seconds)
    return (
        f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
    )


def resource_label(key: str) -> str:
    """``cpu_percent`` → ``CPU``, ``memory_mb`` → ``memory``, ``gpu_util_percent`` →
    ``GPU``, ``gpu_memory_mb`` → ``GPU memory``."""
    low = key.lower()
    if low.startswith("cpu"):
        return "CPU"
    for suffix in ("_percent", "_pct", "_bytes", "_kb", "_mb", "_gb"):
        if low.endswith(suffix):
            low = low[: -len(suffix)]
    if low.startswith("gpu"):
        return {"gpu_util": "GPU", "gpu_memory": "GPU memory", "gpu_count": "GPUs"}.get(
            low, low.replace("gpu", "GPU", 1).replace("_", " ")
        )
    return low.replace("_", " ")


RESOURCE_ORDER = ("cpu", "memory", "gpu_util", "gpu_memory")


def resource_keys(values: dict[str, float]) -> list[str]:
    """CPU, memory, then GPU utilisation and memory, then anything else."""

    def rank(key: str) -> tuple[int, str]:
        low = key.lower()
        hit = [i for i, p in enumerate(RESOURCE_ORDER) if low.startswith(p)]
        return (hit[-1] if hit else len(RESOURCE_ORDER), low)

    return sorted(values, key=rank)


def format_resources(values: dict[str, float]) -> str:
    """``CPU 57%, memory 1.2 GiB, GPU 93%, GPU memory 10.5 GiB``."""
    return ", ".join(
        f"{resource_label(k)} {format_resource(k, values[k])}" for k in resource_keys(values)
    )


def format_resource(key: str, value: float) -> str:
    """``cpu_percent 57.2`` → ``57%``; byte counts → ``1.2 GiB``."""
    low = key.lower()
    for suffix, scale in (("_kb", 2**10), ("_mb", 2**20), ("_gb", 2**30)):
        if low.endswith(suffix):
            low, value = low[: -len(suffix)] + "_bytes", value * scale
    if "percent" in low or low.endswith("_pct") or low == "cpu":
        return f"{value:.0f}%"
    if any(w in low for w in ("memory", "rss", "bytes", "mem")):
        for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
            if abs(value) < 1024 or unit == "TiB":
                return f"{value:.1f} {unit}" if unit != "B" else f"{value:.0f} B"
            value /= 1024
    return f"{value:.3g}"
