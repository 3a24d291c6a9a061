"""A local job's one event stream: status, replica changes, log lines, metrics and
resource samples, read from the job directory (any process may follow any job)."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Hashable, Iterator

from jupyter_ddl.backends.folds import line_events, replica_events
from jupyter_ddl.backends.local.jobdir import JobDir
from jupyter_ddl.backends.local.logs import LogEvents, LogFollower, Pacer, count_lines
from jupyter_ddl.backends.local.usage import UsageSampler
from jupyter_ddl.models import EventKind, JobEvent, JobState, JobStatus, ReplicaStatus

RESOURCE_EVERY = 2.0
STATUS_EVERY = 0.25  # seconds between status reads while watching


def watch_job(
    read_status: Callable[[JobDir], JobStatus],
    jd: JobDir,
    stop: threading.Event,
    from_start: bool,
) -> Iterator[JobEvent]:
    """The one event stream: status, replica changes, log lines, metrics, resources.

    Logs are polled (bounded reads, paced by ``Pacer``); the status file, the
    supervisor check and the log directory listing cost more than a poll, so they are
    refreshed every ``STATUS_EVERY`` seconds only, and always before the poll that
    may end the stream (no line written before the end is lost)."""
    name = jd.name
    follow: dict[str, LogFollower] = {}
    seen_state: JobState | None = None
    seen_message: str | None = None
    seen_replicas: dict[str, Hashable] = {}
    sampler = UsageSampler()
    log_event = LogEvents(name)
    pacer = Pacer()
    next_sample = next_status = 0.0
    status = read_status(jd)
    while not stop.is_set():
        refreshed = time.monotonic() >= next_status
        if refreshed:
            status, next_status = read_status(jd), time.monotonic() + STATUS_EVERY
        if refreshed or _logs_missing(status, follow):
            # a replica's first lines are what a starting job's user waits for: until
            # every replica's log is found, look each poll (a listing of a small dir)
            for rid, path in jd.log_files().items():  # listed after the status read
                if rid not in follow:
                    start = 0 if from_start or seen_state is not None else count_lines(path)
                    follow[rid] = LogFollower(rid, path, start)
        got, behind = False, False
        for f in follow.values():
            lines = f.poll()
            behind = behind or f.behind
            got = got or bool(lines)
            yield from line_events(name, lines, functools.partial(log_event, now=time.time()))
        if refreshed:
            yield from replica_events(name, status.replicas, seen_replicas, _changed)
        if status.state != seen_state or status.message != seen_message:
            # the message changes while the state stays (a stalled job says so)
            seen_state, seen_message = status.state, status.message
            if status.state.finished and (got or behind):
                seen_state = None  # drain the logs before announcing the end
            else:
                yield JobEvent(EventKind.STATUS, name, status=status)
        if status.state.finished and not (got or behind) and seen_state == status.state:
            return
        if time.monotonic() >= next_sample and not status.state.finished:
            next_sample = time.monotonic() + RESOURCE_EVERY
            for rid, sample in sampler.sample(status.replicas).items():
                yield JobEvent(EventKind.RESOURCE, name, replica=rid, metrics=sample)
        delay = pacer.next(got, behind)
        if delay and not status.state.finished:
            stop.wait(delay)


def _logs_missing(status: JobStatus, follow: dict[str, LogFollower]) -> bool:
    if status.state.finished:
        return False
    return not status.replicas or any(r.id not in follow for r in status.replicas)


def _changed(r: ReplicaStatus) -> Hashable:
    return (r.state, r.restarts, r.exit_code, r.signal, r.message)
