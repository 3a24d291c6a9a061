"""The dashboard's model (pure): a job's event stream folded into bounded buffers.

Every view (widgets, the text/HTML fallback, the final static output) renders from one
``DashboardState``; the state never grows without bound: ``tail`` log lines per replica
and in the merged view, ``max_points`` metric points per series (halved by dropping
every other point when full, so the whole run stays visible).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from ..metrics import METRIC_MARKER
from ..models import EventKind, JobEvent, JobState, ReplicaStatus

#: one colour per replica, in order of appearance (readable on light and dark themes)
PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
    "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
)  # fmt: skip

Series = list[tuple[float, float]]  # (step, value)


@dataclass
class ReplicaView:
    id: str  # "worker-1"
    color: str
    state: str = "Pending"
    restarts: int = 0
    exit_code: int | None = None
    message: str | None = None
    lines: deque[str] = field(default_factory=deque)
    line_count: int = 0  # every line received (report() lines aside), kept or not
    metrics: dict[str, Series] = field(default_factory=dict)
    latest: dict[str, float] = field(default_factory=dict)
    resources: dict[str, float] = field(default_factory=dict)
    metric_events: int = 0


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
        self.replicas: dict[str, ReplicaView] = {}
        self.merged: deque[tuple[str, str]] = deque(maxlen=self.tail)
        self.version = 0
        self.events = 0

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
        for rs in st.replicas:
            self._replica_status(rs)

    def _replica(self, event: JobEvent) -> None:
        if event.replica_status is not None:
            self._replica_status(event.replica_status)

    def _replica_status(self, rs: ReplicaStatus) -> None:
        view = self.replica(rs.id)
        view.state, view.restarts = rs.state.value, rs.restarts
        view.exit_code, view.message = rs.exit_code, rs.message

    def _log(self, event: JobEvent) -> None:
        line = event.log
        if line is None:
            return
        view = self.replica(line.replica)
        if METRIC_MARKER in line.text:
            return  # report() lines arrive as METRIC events too; raw JSON is noise here
        view.line_count += 1
        view.lines.append(line.text)
        self.merged.append((line.replica, line.text))

    def _metric(self, event: JobEvent) -> None:
        if not event.replica or not event.metrics:
            return
        view = self.replica(event.replica)
        view.metric_events += 1
        step = float(event.step) if event.step is not None else float(view.metric_events)
        for key, value in event.metrics.items():
            series = view.metrics.setdefault(key, [])
            series.append((step, float(value)))
            if len(series) > self.max_points:
                # keep the shape of the whole run (first and last point too) in bounded memory
                series[:] = series[::2] if len(series) % 2 else [*series[::2], series[-1]]
            view.latest[key] = float(value)

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

    def elapsed(self, now: float | None = None) -> float:
        start = self.started or self.created or self.first_seen
        end = self.finished_at if self.finished and self.finished_at else (now or time.time())
        return max(0.0, end - start)

    def series(self) -> dict[str, dict[str, Series]]:
        """replica id → metric → points, for the chart."""
        return {rid: dict(v.metrics) for rid, v in self.replicas.items() if v.metrics}

    def colors(self) -> dict[str, str]:
        return {rid: v.color for rid, v in self.replicas.items()}

    def latest_metric(self, rid: str) -> str:
        """``loss=0.41`` for the replica table: loss first, else any metric."""
        latest = self.replicas[rid].latest
        if not latest:
            return ""
        key = "loss" if "loss" in latest else sorted(latest)[0]
        return f"{key}={latest[key]:.4g}"


_HANDLERS = {
    EventKind.STATUS: DashboardState._status,
    EventKind.REPLICA: DashboardState._replica,
    EventKind.LOG: DashboardState._log,
    EventKind.METRIC: DashboardState._metric,
    EventKind.RESOURCE: DashboardState._resource,
    EventKind.WAITING: DashboardState._waiting,
}


def format_elapsed(seconds: float) -> str:
    s = int(seconds)
    return (
        f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
    )


def resource_label(key: str) -> str:
    """``cpu_percent`` → ``CPU``, ``memory_mb`` → ``memory``, ``gpu0_util`` → ``gpu0 util``."""
    low = key.lower()
    if low.startswith("cpu"):
        return "CPU"
    for suffix in ("_percent", "_pct", "_bytes", "_kb", "_mb", "_gb"):
        if low.endswith(suffix):
            low = low[: -len(suffix)]
    return low.replace("_", " ")


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
