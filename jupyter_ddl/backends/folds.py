"""Event folds both backends' streams share (pure): a log line's LOG and METRIC events,
and a REPLICA event when a replica changed."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator

from jupyter_ddl.core.metrics import is_metric_line, parse_metric_line
from jupyter_ddl.models import EventKind, JobEvent, LogLine, ReplicaStatus

ReplicaKey = Callable[[ReplicaStatus], Hashable]


def line_events(
    name: str,
    lines: Iterable[LogLine],
    log_event: Callable[[LogLine], JobEvent],
    *,
    raw: bool = False,
) -> Iterator[JobEvent]:
    """Each line's LOG event (a ``report()`` line's only when ``raw``: it is a METRIC
    event), then its METRIC event, after it: a view shows the line before the point."""
    for line in lines:
        if raw or not is_metric_line(line.text):
            yield log_event(line)
        m = parse_metric_line(line.text)
        if m is not None:
            yield JobEvent(
                EventKind.METRIC, name, replica=line.replica, metrics=m.values, step=m.step,
                source=m.source,
            )  # fmt: skip


def replica_events(
    name: str,
    replicas: Iterable[ReplicaStatus],
    seen: dict[str, Hashable],
    key: ReplicaKey,
    before: Callable[[ReplicaStatus], None] | None = None,
    ready: Callable[[ReplicaStatus], bool] | None = None,
) -> Iterator[JobEvent]:
    """A REPLICA event for each replica whose ``key`` differs from the one in ``seen``
    (updated); ``before`` completes a replica's status before its event goes out, and
    a replica that is not ``ready`` yet waits for a later call."""
    for r in replicas:
        k = key(r)
        if seen.get(r.id) != k and (ready is None or ready(r)):
            seen[r.id] = k
            if before is not None:
                before(r)
            yield JobEvent(EventKind.REPLICA, name, replica=r.id, replica_status=r)
