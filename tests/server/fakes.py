"""An in-memory Backend: a real subclass whose replicas are threads printing lines.

Used where a test is about the REST layer's behaviour for states a real local job
reaches too slowly or not at all on a shared 2-core machine (many jobs in a list,
an unavailable backend). The acceptance paths use real local jobs (test_local_jobs.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from jupyter_ddl.backends.base import Backend
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
    def __init__(self, spec: JobSpec, lines: int, period: float) -> None:
        self.spec = spec
        self.status = JobStatus(
            name=spec.name,
            backend="local",
            strategy=spec.strategy,
            state=JobState.RUNNING,
            replicas=[
                ReplicaStatus(role=role, index=i, state=ReplicaState.RUNNING)
                for role, n in spec.replicas.items()
                for i in range(n)
            ],
            created=time.time(),
            started=time.time(),
            notebook=spec.notebook,
        )
        self.logs: dict[str, list[LogLine]] = {r.id: [] for r in self.status.replicas}
        self.cond = threading.Condition()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(lines, period), daemon=True)
        self.thread.start()

    def _run(self, lines: int, period: float) -> None:
        for step in range(lines):
            if self.stop.wait(period):
                return self._end(JobState.CANCELLED, ReplicaState.TERMINATED)
            with self.cond:
                for rid, buf in self.logs.items():
                    text = f"{rid} step={step} loss={1.0 / (step + 1):.4f}"
                    buf.append(LogLine(rid, len(buf), text, time.time()))
                self.cond.notify_all()
        self._end(JobState.SUCCEEDED, ReplicaState.SUCCEEDED)

    def _end(self, state: JobState, rstate: ReplicaState) -> None:
        with self.cond:
            self.status.state = state
            self.status.finished = time.time()
            for r in self.status.replicas:
                r.state = rstate
            self.cond.notify_all()


class FakeBackend(Backend):
    name = "local"

    def __init__(self, lines: int = 1000, period: float = 0.05) -> None:
        super().__init__()
        self.jobs: dict[str, _Job] = {}
        self.lines, self.period = lines, period

    def submit(self, spec: JobSpec, bundle: CodeBundle) -> JobHandle:
        if spec.name in self.jobs:
            raise JobConflict(f"a job named {spec.name!r} exists", hint="pick another name")
        self.jobs[spec.name] = _Job(spec, self.lines, self.period)
        return JobHandle(spec.name, self.name, notebook=spec.notebook)

    def _job(self, name: str) -> _Job:
        if name not in self.jobs:
            raise JobNotFound(f"no job named {name!r}", hint="list the jobs")
        return self.jobs[name]

    def get(self, name: str) -> JobStatus:
        return self._job(name).status

    def list(self, *, notebook: str | None = None) -> list[JobStatus]:
        return [j.status for j in self.jobs.values() if notebook in (None, j.status.notebook)]

    def watch(self, name, *, stop=None, from_start=True) -> Iterator[JobEvent]:  # type: ignore[no-untyped-def]
        yield JobEvent(EventKind.STATUS, name, status=self._job(name).status)

    def logs(self, name, *, replica=None, offset=0, tail=None, follow=False, stop=None, raw=False):  # type: ignore[no-untyped-def]
        job = self._job(name)
        sent = {rid: offset for rid in job.logs if replica in (None, rid)}
        if tail is not None:
            sent = {rid: max(offset, len(job.logs[rid]) - tail) for rid in sent}
        while not (stop is not None and stop.is_set()):
            with job.cond:
                batch = [ln for rid, n in sent.items() for ln in job.logs[rid][n:]]
                ended = job.status.state.finished
                if not batch and follow and not ended:
                    job.cond.wait(0.2)
                    continue
            for line in batch:
                sent[line.replica] = line.offset + 1
                if raw or not is_metric_line(line.text):
                    yield line
            if not follow or ended:
                return

    def cancel(self, name: str) -> JobStatus:
        job = self._job(name)
        job.stop.set()
        job.thread.join(5)
        return job.status

    def delete(self, name: str) -> None:
        self.cancel(name)
        del self.jobs[name]

    def capabilities(self) -> Capabilities:
        return Capabilities(strategies=("ddp",), resource_metrics=False)

    def spec(self, name: str) -> JobSpec | None:
        return self._job(name).spec

    def close(self) -> None:
        for job in self.jobs.values():
            job.stop.set()
