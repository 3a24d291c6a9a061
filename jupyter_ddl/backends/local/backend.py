"""LocalBackend: replicas as processes on this machine, one supervisor per job.

Everything lives in the job directory (see ``jobdir``), so any LocalBackend instance
(a restarted kernel, the server extension) lists, watches and cancels every job.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil

from ...config import Config, data_dir
from ...errors import JobConflict, JobNotFound, ValidationError
from ...metrics import parse_metric_line
from ...models import (
    Capabilities,
    CodeBundle,
    EventKind,
    JobEvent,
    JobHandle,
    JobSpec,
    JobState,
    JobStatus,
    LogLine,
    ReplicaStatus,
)
from ...strategies import CATALOG
from ..base import Backend
from . import gpus
from .jobdir import SUPERVISOR_PATH_ENV, JobDir, jobs_root, write_json
from .logs import LogEvents, LogFollower, Pacer, count_lines, iter_logs
from .replica import kill_tree

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])
START_GRACE = 15.0  # a job dir without a supervisor record is still being created
RESOURCE_EVERY = 2.0
STATUS_EVERY = 0.25  # seconds between status reads while watching


class LocalBackend(Backend):
    name = "local"

    def __init__(self, config: Config | None = None, *, root: Path | None = None) -> None:
        super().__init__(config)
        self.root = root or jobs_root(data_dir())
        self._spawned: list[subprocess.Popen[bytes]] = []

    # -- paths -------------------------------------------------------------------------
    def _jobdir(self, name: str) -> JobDir:
        if not name or "/" in name or name.startswith("."):
            raise ValidationError(
                f"name: {name!r} is not a job name; use lowercase letters, digits and '-'"
            )
        jd = JobDir(self.root / name)
        if not jd.exists():
            raise JobNotFound(f"no local job named {name!r}", hint="`%ddl list` shows the jobs")
        return jd

    # -- submit ------------------------------------------------------------------------
    def submit(self, spec: JobSpec, bundle: CodeBundle) -> JobHandle:
        """Write the job directory and start its supervisor. Raises JobConflict when the
        name is taken, ResourceError when the job wants more GPUs than are here."""
        self._check_resources(spec)
        jd = JobDir(self.root / spec.name)
        self._jobdir_name_ok(spec.name)
        handle = JobHandle(
            name=spec.name, backend=self.name, notebook=spec.notebook or bundle.source_notebook,
            code_digest=bundle.digest,
        )  # fmt: skip
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            jd.create(
                spec, bundle, handle, cwd=os.getcwd(), python=self.config.python or sys.executable
            )
        except FileExistsError:
            raise JobConflict(
                f"a local job named {spec.name!r} exists already",
                hint=f"pick another name, or `%ddl delete {spec.name}` first",
            ) from None
        self._start_supervisor(jd)
        return handle

    def _jobdir_name_ok(self, name: str) -> None:
        if not name or "/" in name or name.startswith(".") or name != name.strip():
            raise ValidationError(
                f"name: {name!r} is not a job name; use lowercase letters, digits and '-'"
            )

    def _check_resources(self, spec: JobSpec) -> None:
        asked = spec.shape.gpu_requests()
        if any(n for _, n in asked):
            gpus.assign_gpus(asked, gpus.detect_gpus())  # raises ResourceError

    def _start_supervisor(self, jd: JobDir) -> None:
        env = dict(os.environ)
        # jupyter_ddl need not be installed (a source checkout): make it importable for
        # the supervisor only; it takes this entry off again for the replicas.
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p
        )
        env[SUPERVISOR_PATH_ENV] = _PACKAGE_PARENT
        with open(jd.supervisor_log, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "jupyter_ddl.backends.local.supervisor", str(jd.root)],
                cwd=jd.root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # survives the kernel and its Ctrl-C
            )
        self._spawned.append(proc)  # reaped in _reap(): no zombies left in the kernel
        try:  # known at once, so a slow-starting supervisor never looks dead
            write_json(
                jd.supervisor_path,
                {"pid": proc.pid, "create_time": psutil.Process(proc.pid).create_time()},
            )
        except psutil.Error:
            pass  # it already exited; its status (or its absence) says what happened

    def _reap(self) -> None:
        self._spawned = [p for p in self._spawned if p.poll() is None]

    # -- status ------------------------------------------------------------------------
    def get(self, name: str) -> JobStatus:
        return self._status(self._jobdir(name))

    def _status(self, jd: JobDir) -> JobStatus:
        self._reap()
        status = jd.status() or self._initial_status(jd)
        if status.state.finished or _supervisor_alive(jd):
            return status
        status = jd.status() or status  # it may have finished between the two reads
        if not status.state.finished:
            status.state = JobState.FAILED
            status.message = (
                f"the supervisor of {jd.name} stopped unexpectedly; see {jd.supervisor_log}"
            )
            status.finished = time.time()
        return status

    def _initial_status(self, jd: JobDir) -> JobStatus:
        spec, handle = jd.spec(), jd.handle()
        return JobStatus(
            name=spec.name, backend=self.name, strategy=spec.strategy, state=JobState.PENDING,
            replicas=[ReplicaStatus(r, i) for r, i in spec.shape.replica_ids],
            created=handle.created, notebook=handle.notebook, code_digest=handle.code_digest,
        )  # fmt: skip

    def list(self, *, notebook: str | None = None) -> list[JobStatus]:
        if not self.root.is_dir():
            return []
        out = []
        for path in self.root.iterdir():
            jd = JobDir(path)
            if not jd.exists():
                continue
            try:
                status = self._status(jd)
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a directory being deleted right now
            if notebook is None or status.notebook == notebook:
                out.append(status)
        return sorted(out, key=lambda s: s.created or 0, reverse=True)

    def spec(self, name: str) -> JobSpec | None:
        return self._jobdir(name).spec()

    def job_dir(self, name: str) -> Path:
        """Where the job's files are (for `%ddl` and support)."""
        return self._jobdir(name).root

    # -- streams -----------------------------------------------------------------------
    def logs(
        self,
        name: str,
        *,
        replica: str | None = None,
        offset: int = 0,
        tail: int | None = None,
        follow: bool = False,
        stop: threading.Event | None = None,
    ) -> Iterator[LogLine]:
        jd = self._jobdir(name)
        return iter_logs(
            jd, replica=replica, offset=offset, tail=tail, follow=follow, stop=stop,
            finished=lambda: self._status(jd).state.finished,
        )  # fmt: skip

    def watch(
        self, name: str, *, stop: threading.Event | None = None, from_start: bool = True
    ) -> Iterator[JobEvent]:
        jd = self._jobdir(name)
        return _watch(self, jd, stop or threading.Event(), from_start)

    # -- control -----------------------------------------------------------------------
    def cancel(self, name: str) -> JobStatus:
        jd = self._jobdir(name)
        status = self._status(jd)
        if status.state.finished:
            return status
        jd.cancel_path.touch()
        sup = _supervisor_process(jd)
        if sup is not None:
            sup.send_signal(15)
            try:
                sup.wait(timeout=20)
            except psutil.TimeoutExpired:
                kill_tree(sup.pid, 1.0)
        status = self._status(jd)
        if not status.state.finished:  # the supervisor is gone: stop its replicas ourselves
            for r in status.replicas:
                if r.pid:
                    kill_tree(r.pid, 1.0)
            status.state, status.message, status.finished = (
                JobState.CANCELLED,
                "cancelled by the user",
                time.time(),
            )
            jd.write_status(status)
        return status

    def delete(self, name: str) -> None:
        jd = self._jobdir(name)
        self.cancel(name)
        shutil.rmtree(jd.root, ignore_errors=True)

    def capabilities(self) -> Capabilities:
        names = tuple(n for n, s in CATALOG.items() if not s.needs_tpu)
        return Capabilities(
            gpus=len(gpus.detect_gpus()), strategies=names, resource_metrics=True,
            detail={"data_dir": str(self.root.parent)},
        )  # fmt: skip


def _supervisor_process(jd: JobDir) -> psutil.Process | None:
    info = jd.supervisor()
    if not info:
        return None
    try:
        p = psutil.Process(int(info["pid"]))
        if (
            abs(p.create_time() - float(info["create_time"])) < 1.0
            and p.status() != psutil.STATUS_ZOMBIE
        ):
            return p
    except (psutil.Error, KeyError, ValueError):
        pass
    return None


def _supervisor_alive(jd: JobDir) -> bool:
    if _supervisor_process(jd) is not None:
        return True
    if jd.supervisor() is None:  # not started yet, or never will: judge by age
        try:
            return time.time() - jd.handle_path.stat().st_mtime < START_GRACE
        except OSError:
            return False
    return False


def _watch(
    backend: LocalBackend, jd: JobDir, stop: threading.Event, from_start: bool
) -> Iterator[JobEvent]:
    """The one event stream: status, replica changes, log lines, metrics, resources.

    Logs are polled (bounded reads, paced by ``Pacer``); the status file, the
    supervisor check and the log directory listing cost more than a poll, so they are
    refreshed every ``STATUS_EVERY`` seconds only, and always before the poll that
    may end the stream (no line written before the end is lost)."""
    name = jd.name
    follow: dict[str, LogFollower] = {}
    seen_state: JobState | None = None
    seen_replicas: dict[str, tuple] = {}
    sampler = _Sampler()
    log_event = LogEvents(name)
    pacer = Pacer()
    next_sample = next_status = 0.0
    status = backend._status(jd)
    while not stop.is_set():
        refreshed = time.monotonic() >= next_status
        if refreshed:
            status, next_status = backend._status(jd), time.monotonic() + STATUS_EVERY
            for rid, path in jd.log_files().items():  # listed after the status read
                if rid not in follow:
                    start = 0 if from_start or seen_state is not None else count_lines(path)
                    follow[rid] = LogFollower(rid, path, start)
        got, behind = False, False
        for f in follow.values():
            lines = f.poll()
            behind = behind or f.behind
            got = got or bool(lines)
            yield from _line_events(name, lines, log_event)
        if refreshed:
            yield from _replica_events(name, status, seen_replicas)
        if status.state != seen_state:
            seen_state = status.state
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


def _line_events(name: str, lines: list[LogLine], log_event: LogEvents) -> Iterator[JobEvent]:
    now = time.time()
    for line in lines:
        yield log_event(line, now)
        m = parse_metric_line(line.text)
        if m is not None:
            yield JobEvent(
                EventKind.METRIC, name, replica=line.replica, metrics=m.values, step=m.step
            )


def _replica_events(name: str, status: JobStatus, seen: dict[str, tuple]) -> Iterator[JobEvent]:
    for r in status.replicas:
        key = (r.state, r.restarts, r.exit_code, r.signal, r.message)
        if seen.get(r.id) != key:
            seen[r.id] = key
            yield JobEvent(EventKind.REPLICA, name, replica=r.id, replica_status=r)


class _Sampler:
    """CPU and memory of each replica's process tree (psutil)."""

    def __init__(self) -> None:
        self._procs: dict[int, psutil.Process] = {}

    def sample(self, replicas: list[ReplicaStatus]) -> dict[str, dict[str, float]]:
        out = {}
        for r in replicas:
            if not r.pid:
                continue
            try:
                root = self._procs.setdefault(r.pid, psutil.Process(r.pid))
                tree = [root, *root.children(recursive=True)]
                cpu = sum(p.cpu_percent(None) for p in tree)
                rss = sum(p.memory_info().rss for p in tree)
            except psutil.Error:
                continue
            out[r.id] = {"cpu_percent": cpu, "memory_mb": rss / 2**20}
        return out
