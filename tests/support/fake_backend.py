"""The one in-memory backend of the tests: a real ``Backend`` subclass (a fake, not a
mock) that honours tests/backend_contract.py like the local and Kubernetes backends.

Its events come in a real backend's order: a replica's change as a REPLICA event, then
the job's STATUS; a log line as a LOG event, then the METRIC read from it (a
``report()`` line is a METRIC event only); the stream ends on the finished STATUS, after
every line. Strategies are the real catalog's, a replica is looked up among the job's
(``Backend.logs``), cancel is idempotent, delete forgets the job.

Two ways to run a job:

- ``run_code=True``: each replica runs the bundle's cell in a thread of this process,
  its ``print`` and ``report()`` lines going to the replica's log. ``time.sleep`` in
  the cell is cut short by ``cancel`` (a thread cannot be killed: the cell's ``time``
  is one whose sleep watches the job's stop).
- ``run_code=False``: the test plays the job by hand: ``start(name)``,
  ``log(name, "worker-0", "text")``, ``metric(...)``, ``resource(...)``,
  ``finish(name, JobState.SUCCEEDED)``.
"""

from __future__ import annotations

import builtins
import json
import threading
import time
import traceback
import types
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from jupyter_ddl.backends.base import Backend, LogQuery
from jupyter_ddl.config import Config
from jupyter_ddl.core.bundle import CELL
from jupyter_ddl.core.contract import replica_ids
from jupyter_ddl.core.metrics import METRIC_MARKER, is_metric_line, parse_metric_line
from jupyter_ddl.core.strategies import CATALOG
from jupyter_ddl.errors import JobConflict, JobNotFound
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

_REPLICA_END = {
    JobState.SUCCEEDED: ReplicaState.SUCCEEDED,
    JobState.FAILED: ReplicaState.FAILED,
}


class _Stopped(BaseException):
    """Raised inside a replica's cell when its job is cancelled (not an Exception, so
    the cell's own ``except Exception`` does not swallow it)."""


class _Job:
    def __init__(self, backend: str, spec: JobSpec, bundle: CodeBundle) -> None:
        self.spec, self.bundle = spec, bundle
        self.status = JobStatus(
            spec.name, backend, spec.strategy, JobState.PENDING, created=time.time(),
            replicas=[ReplicaStatus(r, i) for r, i in replica_ids(spec)],
            notebook=spec.notebook,
        )  # fmt: skip
        self.events: list[JobEvent] = []
        self.lines: dict[str, list[LogLine]] = {}  # every line as written, report() too
        self.cond = threading.Condition()
        self.stop = threading.Event()
        self.seen: dict[str, tuple] = {}  # each replica's last published state
        self.seen_job: tuple | None = None


class FakeBackend(Backend):
    name = "local"

    def __init__(
        self, config: Config | None = None, *, run_code: bool = False, name: str = "local"
    ) -> None:
        super().__init__(config or Config())
        self.name = name
        self.run_code = run_code
        self.jobs: dict[str, _Job] = {}
        self.submitted: list[tuple[JobSpec, CodeBundle]] = []
        self.cancelled: list[str] = []

    # -- playing a job (what tests and the replica threads call) --------------------------
    def set_state(
        self,
        name: str,
        state: JobState,
        replica_state: ReplicaState,
        message: str | None = None,
        *,
        exit_codes: dict[str, int] | None = None,
    ) -> None:
        """The job and every replica not finished yet move to these states."""
        job = self.jobs[name]
        with job.cond:
            now = time.time()
            job.status.state, job.status.message = state, message
            if state == JobState.RUNNING and job.status.started is None:
                job.status.started = now
            if state.finished:
                job.status.finished = now
            for r in job.status.replicas:
                if r.state.finished:
                    continue
                r.state = replica_state
                if replica_state.finished:
                    default = 0 if replica_state == ReplicaState.SUCCEEDED else 1
                    r.exit_code = (exit_codes or {}).get(r.id, default)
            self._publish(job)

    def start(self, name: str) -> None:
        self.set_state(name, JobState.RUNNING, ReplicaState.RUNNING)

    def finish(
        self, name: str, state: JobState = JobState.SUCCEEDED, message: str | None = None
    ) -> None:
        self.set_state(name, state, _REPLICA_END.get(state, ReplicaState.TERMINATED), message)

    def log(self, name: str, replica: str, text: str) -> None:
        """One line in the replica's log: a LOG event (unless a ``report()`` line), then
        the METRIC the line carries, as the real event streams give them."""
        job = self.jobs[name]
        with job.cond:
            lines = job.lines.setdefault(replica, [])
            line = LogLine(replica, len(lines), text, time.time())
            lines.append(line)
            if not is_metric_line(text):
                self._emit(job, JobEvent(EventKind.LOG, name, replica=replica, log=line))
            m = parse_metric_line(text)
            if m is not None:
                self._emit(job, JobEvent(
                    EventKind.METRIC, name, replica=replica, metrics=m.values, step=m.step,
                    source=m.source,
                ))  # fmt: skip

    def metric(self, name: str, replica: str, step: int | None = None, **values: float) -> None:
        """What ``report(step=..., **values)`` in the cell writes."""
        data = {"step": step, **values} if step is not None else values
        self.log(name, replica, f"{METRIC_MARKER} {json.dumps(data)}")

    def resource(self, name: str, replica: str, **values: float) -> None:
        job = self.jobs[name]
        with job.cond:
            self._emit(job, JobEvent(EventKind.RESOURCE, name, replica=replica, metrics=values))

    def _emit(self, job: _Job, event: JobEvent) -> None:
        job.events.append(event)
        job.cond.notify_all()

    def _publish(self, job: _Job) -> None:
        """REPLICA events for the replicas that changed, then STATUS if the job did."""
        for r in job.status.replicas:
            key = (r.state, r.restarts, r.exit_code, r.message)
            if job.seen.get(r.id) != key:
                job.seen[r.id] = key
                self._emit(job, JobEvent(
                    EventKind.REPLICA, job.spec.name, replica=r.id, replica_status=replace(r)
                ))  # fmt: skip
        key_job = (job.status.state, job.status.message)
        if job.seen_job != key_job:
            job.seen_job = key_job
            self._emit(job, JobEvent(EventKind.STATUS, job.spec.name, status=_copy(job.status)))

    # -- running the cell (run_code=True) ------------------------------------------------------
    def _run(self, name: str) -> None:
        job = self.jobs[name]
        threads = [
            threading.Thread(target=self._replica, args=(job, r.id), daemon=True)
            for r in job.status.replicas
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with job.cond:
            if job.status.state.finished:  # cancelled meanwhile
                return
            failed = [r for r in job.status.replicas if r.state == ReplicaState.FAILED]
            if failed:
                first = failed[0]
                message = f"replica {first.id} failed (exit code {first.exit_code})"
                self.set_state(name, JobState.FAILED, ReplicaState.TERMINATED, message)
            else:
                self.set_state(name, JobState.SUCCEEDED, ReplicaState.SUCCEEDED)

    def _replica(self, job: _Job, rid: str) -> None:
        name = job.spec.name
        stop = job.stop

        def say(*args: Any, sep: str | None = " ", end: str | None = "\n", **_: Any) -> None:
            if stop.is_set():
                raise _Stopped
            text = (sep if sep is not None else " ").join(str(a) for a in args)
            for part in text.splitlines() or [""]:
                self.log(name, rid, part)

        def report(**metrics: Any) -> None:
            say(f"{METRIC_MARKER} {json.dumps(metrics, default=float)}")

        def sleep(seconds: float) -> None:
            if stop.wait(seconds):
                raise _Stopped

        fake_time = types.ModuleType("time")
        fake_time.__dict__.update({**vars(time), "sleep": sleep})

        def import_(module: str, *args: Any, **kwargs: Any) -> Any:
            return fake_time if module == "time" else builtins.__import__(module, *args, **kwargs)

        cell = job.bundle.files.get(CELL) or job.bundle.files.get("main.py", b"")
        scope = {
            "__name__": "__main__",
            "__builtins__": {**vars(builtins), "print": say, "__import__": import_},
            "report": report,
        }
        code = 0
        try:
            exec(compile(cell, CELL, "exec"), scope)
        except _Stopped:
            return
        except BaseException as e:  # noqa: BLE001 - the cell's error ends its replica
            code = e.code if isinstance(e, SystemExit) and isinstance(e.code, int) else 1
            if code:
                for part in traceback.format_exception(e):
                    for line in part.rstrip("\n").splitlines():
                        self.log(name, rid, line)
        state = ReplicaState.SUCCEEDED if code == 0 else ReplicaState.FAILED
        with job.cond:
            for r in job.status.replicas:
                if r.id == rid and not r.state.finished:
                    r.state, r.exit_code = state, code
            self._publish(job)

    # -- Backend ---------------------------------------------------------------------------
    def submit(self, spec: JobSpec, bundle: CodeBundle) -> JobHandle:
        if spec.name in self.jobs:
            raise JobConflict(f"a job named {spec.name!r} exists", hint="pick another --name")
        job = self.jobs[spec.name] = _Job(self.name, spec, bundle)
        self.submitted.append((spec, bundle))
        with job.cond:
            self._publish(job)
        if self.run_code:  # running when submit returns, as a started local job is
            self.start(spec.name)
            threading.Thread(target=self._run, args=(spec.name,), daemon=True).start()
        return JobHandle(spec.name, self.name, notebook=spec.notebook, code_digest=bundle.digest)

    def _job(self, name: str) -> _Job:
        if name not in self.jobs:
            raise JobNotFound(f"no job named {name!r}", hint="`%ddl list` shows the jobs")
        return self.jobs[name]

    def get(self, name: str) -> JobStatus:
        job = self._job(name)
        with job.cond:
            return _copy(job.status)

    def list(self, *, notebook: str | None = None) -> list[JobStatus]:
        jobs = [self.get(n) for n in reversed(list(self.jobs))]  # newest first
        return [s for s in jobs if notebook in (None, s.notebook)]

    def watch(
        self, name: str, *, stop: threading.Event | None = None, from_start: bool = True
    ) -> Iterator[JobEvent]:
        job = self._job(name)
        with job.cond:
            written = len(job.events)  # lines already written are replayed from_start only
        i = 0
        while stop is None or not stop.is_set():
            with job.cond:
                if i >= len(job.events):
                    job.cond.wait(0.05)
                batch = job.events[i:]
            for ev in batch:
                i += 1
                if not from_start and i <= written and ev.kind in (EventKind.LOG, EventKind.METRIC):
                    continue
                yield ev
                if ev.kind == EventKind.STATUS and ev.status and ev.status.state.finished:
                    return

    def read_logs(self, name: str, query: LogQuery) -> Iterator[LogLine]:
        job = self._job(name)
        q = query
        sent: dict[str, int] = {}
        while True:
            with job.cond:
                ended = job.status.state.finished
                batch = self._unsent(job, q, sent)
                if not batch and q.follow and not ended:
                    job.cond.wait(0.1)
            yield from batch
            if (not q.follow or ended) and not batch:
                return
            if q.stop is not None and q.stop.is_set():
                return

    def _unsent(self, job: _Job, q: LogQuery, sent: dict[str, int]) -> list[LogLine]:
        """The lines not given yet, replica by replica in the job's order (the first
        call applies ``offset`` and ``tail``)."""
        out: list[LogLine] = []
        order = [r.id for r in job.status.replicas]  # the job's order, as real backends
        for rid in sorted(job.lines, key=lambda r: order.index(r) if r in order else len(order)):
            if q.replica not in (None, rid):
                continue
            lines = job.lines[rid]
            if rid not in sent:
                shown = [ln.offset for ln in lines if q.raw or not is_metric_line(ln.text)]
                if q.tail is not None:
                    shown = shown[len(shown) - q.tail :] if q.tail else [len(lines)]
                sent[rid] = max(q.offset, shown[0] if shown else len(lines))
            new = lines[sent[rid] :]
            sent[rid] = max(sent[rid], len(lines))
            out += [ln for ln in new if q.raw or not is_metric_line(ln.text)]
        return out

    def cancel(self, name: str) -> JobStatus:
        job = self._job(name)
        self.cancelled.append(name)
        job.stop.set()
        with job.cond:
            if not job.status.state.finished:
                self.finish(name, JobState.CANCELLED)
        return self.get(name)

    def delete(self, name: str) -> None:
        job = self._job(name)
        job.stop.set()
        with job.cond:
            if not job.status.state.finished:
                self.finish(name, JobState.CANCELLED)
        del self.jobs[name]

    def capabilities(self) -> Capabilities:
        return Capabilities(strategies=tuple(CATALOG))

    def spec(self, name: str) -> JobSpec | None:
        return self._job(name).spec

    def close(self) -> None:
        for job in self.jobs.values():
            job.stop.set()


def _copy(status: JobStatus) -> JobStatus:
    return JobStatus.from_dict(status.to_dict())


def steps(lines: int, period: float = 0.05) -> str:
    """A cell printing ``lines`` metric lines (``step=N loss=X``), one every ``period``
    seconds: a job that runs as long as a test needs."""
    return (
        f"import time\nfor step in range({lines}):\n    time.sleep({period})\n"
        "    print(f'step={step} loss={1.0 / (step + 1):.4f}')\n"
    )
