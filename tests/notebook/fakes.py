"""A real in-memory Backend subclass the notebook tests drive by hand (a fake, not a mock).

Tests submit through the magics/form (so through JobManager) and then play the job:
``fake.start(name)``, ``fake.log(name, "worker-0", "text")``, ``fake.metric(...)``,
``fake.finish(name, JobState.SUCCEEDED)``. ``watch`` streams exactly those events.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator

from jupyter_ddl.backends.base import Backend
from jupyter_ddl.contract import replica_ids
from jupyter_ddl.errors import JobConflict, JobNotFound
from jupyter_ddl.metrics import is_metric_line
from jupyter_ddl.models import (
    Capabilities,
    CodeBundle,
    EventKind,
    JobEvent,
    JobHandle,
    JobSpec,
    JobState,
    JobStatus,
    LogLine,
    ReplicaState,
    ReplicaStatus,
)


class _Job:
    def __init__(self, spec: JobSpec, bundle: CodeBundle) -> None:
        self.spec, self.bundle = spec, bundle
        self.status = JobStatus(
            spec.name, "local", spec.strategy, JobState.PENDING, created=time.time(),
            replicas=[ReplicaStatus(r, i) for r, i in replica_ids(spec)],
        )  # fmt: skip
        self.events: list[JobEvent] = []
        self.lines: dict[str, list[str]] = {}
        self.cond = threading.Condition()


class FakeBackend(Backend):
    name = "local"

    def __init__(self, config=None) -> None:
        super().__init__(config)
        self.jobs: dict[str, _Job] = {}
        self.submitted: list[tuple[JobSpec, CodeBundle]] = []
        self.cancelled: list[str] = []

    # -- what tests call -----------------------------------------------------------------
    def _emit(self, name: str, event: JobEvent) -> None:
        job = self.jobs[name]
        with job.cond:
            job.events.append(event)
            job.cond.notify_all()

    def set_state(self, name: str, state: JobState, replica_state: ReplicaState, message=None):
        job = self.jobs[name]
        job.status.state, job.status.message = state, message
        now = time.time()
        if state == JobState.RUNNING:
            job.status.started = now
        if state.finished:
            job.status.finished = now
        for r in job.status.replicas:
            r.state = replica_state
            if replica_state.finished:
                r.exit_code = 0 if replica_state == ReplicaState.SUCCEEDED else 1
        self._emit(name, JobEvent(EventKind.STATUS, name, status=_copy(job.status)))

    def start(self, name: str) -> None:
        self.set_state(name, JobState.RUNNING, ReplicaState.RUNNING)

    def finish(self, name: str, state: JobState = JobState.SUCCEEDED, message=None) -> None:
        rs = {JobState.SUCCEEDED: ReplicaState.SUCCEEDED, JobState.FAILED: ReplicaState.FAILED}
        self.set_state(name, state, rs.get(state, ReplicaState.TERMINATED), message)

    def log(self, name: str, replica: str, text: str) -> None:
        lines = self.jobs[name].lines.setdefault(replica, [])
        line = LogLine(replica, len(lines), text, time.time())
        lines.append(text)
        self._emit(name, JobEvent(EventKind.LOG, name, replica=replica, log=line))

    def metric(self, name: str, replica: str, step: int, source="report", **values: float) -> None:
        self._emit(
            name,
            JobEvent(
                EventKind.METRIC, name, replica=replica, metrics=values, step=step, source=source
            ),
        )

    def resource(self, name: str, replica: str, **values: float) -> None:
        self._emit(name, JobEvent(EventKind.RESOURCE, name, replica=replica, metrics=values))

    # -- Backend ---------------------------------------------------------------------------
    def submit(self, spec: JobSpec, bundle: CodeBundle) -> JobHandle:
        if spec.name in self.jobs:
            raise JobConflict(f"a job named {spec.name!r} exists", hint="pick another --name")
        self.jobs[spec.name] = _Job(spec, bundle)
        self.submitted.append((spec, bundle))
        return JobHandle(spec.name, self.name, code_digest=bundle.digest)

    def _job(self, name: str) -> _Job:
        if name not in self.jobs:
            raise JobNotFound(f"no job named {name!r}", hint="`%ddl list` shows the jobs")
        return self.jobs[name]

    def get(self, name: str) -> JobStatus:
        return _copy(self._job(name).status)

    def list(self, *, notebook=None) -> list[JobStatus]:
        return [_copy(j.status) for j in self.jobs.values()]

    def watch(self, name, *, stop=None, from_start=True) -> Iterator[JobEvent]:
        job = self._job(name)
        i = 0
        while stop is None or not stop.is_set():
            with job.cond:
                if i >= len(job.events):
                    job.cond.wait(0.05)
                batch = job.events[i:]
            i += len(batch)
            for ev in batch:
                if not from_start and ev.kind == EventKind.LOG:
                    continue
                yield ev
                if ev.kind == EventKind.STATUS and ev.status and ev.status.state.finished:
                    return

    def logs(self, name, *, replica=None, offset=0, tail=None, follow=False, stop=None, raw=False):
        job = self._job(name)
        for rid, lines in job.lines.items():
            if replica not in (None, rid):
                continue
            kept = [n for n, t in enumerate(lines) if raw or not is_metric_line(t)]
            if tail is not None:
                kept = kept[len(kept) - tail :] if tail else []
            for n in kept:
                if n >= offset:
                    yield LogLine(rid, n, lines[n])

    def cancel(self, name: str) -> JobStatus:
        self.cancelled.append(name)
        if not self._job(name).status.state.finished:
            self.finish(name, JobState.CANCELLED)
        return self.get(name)

    def delete(self, name: str) -> None:
        self._job(name)
        del self.jobs[name]

    def capabilities(self) -> Capabilities:
        return Capabilities(strategies=("torch-ddp",))

    def spec(self, name: str) -> JobSpec | None:
        return self._job(name).spec


def _copy(status: JobStatus) -> JobStatus:
    return JobStatus.from_dict(status.to_dict())


def drain(q: queue.Queue) -> list:
    out = []
    while not q.empty():
        out.append(q.get_nowait())
    return out
