"""Starting, finding and stopping a local job's supervisor from any process (the
kernel that submitted the job, another kernel, the server extension).

The supervisor is found again through ``supervisor.json`` (pid and start time, so a
recycled pid is never signalled); it says "ready" once its signal handlers are in
place, and a cancel waits for that before sending SIGTERM. When the supervisor is gone
the processes it recorded, and those carrying the job's marker, are stopped here.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

import psutil

from jupyter_ddl._util.atomic import write_atomic
from jupyter_ddl.backends.local import ownership
from jupyter_ddl.backends.local.jobdir import FILE_MODE, SUPERVISOR_PATH_ENV, JobDir
from jupyter_ddl.core.shape import JobShape
from jupyter_ddl.errors import ResourceError
from jupyter_ddl.i18n import tr
from jupyter_ddl.models import JobSpec, JobState, JobStatus, ReplicaState, ReplicaStatus

PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])
START_GRACE = 15.0  # a job dir without a supervisor record is still being created
READY_WAIT = 30.0  # longest wait for a starting supervisor to install its handlers
STOP_WAIT = 20.0  # longest wait for a cancelled supervisor to stop its replicas
LIMIT_KEY = "local_max_processes"
T = TypeVar("T")


# -- starting ------------------------------------------------------------------------
def supervisor_env(jd: JobDir, environ: Mapping[str, str]) -> dict[str, str]:
    """The supervisor's environment: the submitter's ``environ``, with jupyter_ddl
    importable and the job's marker (a warm supervisor takes the same, see ``spare``)."""
    env = with_package(environ)
    env[ownership.MARKER_ENV] = str(jd.root)
    return env


def with_package(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` in which jupyter_ddl is importable: it need not be installed (a
    source checkout). For the supervisor only: it takes this entry off again for the
    replicas (``replica_environ``)."""
    env = dict(environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    env[SUPERVISOR_PATH_ENV] = PACKAGE_PARENT
    return env


def start_supervisor(
    jd: JobDir, environ: Mapping[str, str], cold: str | None = None
) -> subprocess.Popen[bytes]:
    """The job's supervisor, in its own session (it survives the kernel and its Ctrl-C),
    started with ``environ`` (the job's share of the kernel's, ``launch.job_environ``);
    ``cold``: why a job with a warm path did not start from a warm interpreter (its log says so)."""
    argv = [sys.executable, "-m", "jupyter_ddl.backends.local.supervisor_main", str(jd.root)]
    fd = os.open(jd.supervisor_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    with open(fd, "ab") as log:
        proc = subprocess.Popen(
            argv + ([cold] if cold else []),
            cwd=jd.root,
            env=supervisor_env(jd, environ),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:  # known at once, so a slow-starting supervisor never looks dead
        record_supervisor(jd, proc.pid, psutil.Process(proc.pid).create_time())
    except psutil.Error:
        pass  # it already exited; its status (or its absence) says what happened
    return proc


def record_supervisor(jd: JobDir, pid: int, create_time: float) -> None:
    """Name ``pid`` the job's supervisor, unless the supervisor wrote its own ("ready")
    record already: a hard link creates the file whole, or fails when it exists."""
    tmp = jd.root / f".supervisor.{os.getpid()}"
    write_atomic(tmp, json.dumps({"pid": pid, "create_time": create_time}).encode())
    try:
        os.link(tmp, jd.supervisor_path)
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links
        if not jd.supervisor_path.exists():
            os.replace(tmp, jd.supervisor_path)
    finally:
        tmp.unlink(missing_ok=True)


def replica_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The supervisor's environment (or ``environ``) minus the import path added
    above (for the supervisor only)."""
    env = dict(os.environ if environ is None else environ)
    ours = env.pop(SUPERVISOR_PATH_ENV, None)
    if ours and env.get("PYTHONPATH"):
        rest = [p for p in env["PYTHONPATH"].split(os.pathsep) if p != ours]
        env["PYTHONPATH"] = os.pathsep.join(rest)
        if not rest:
            del env["PYTHONPATH"]
    return env


def process_count(shape: JobShape) -> int:
    """Processes a job runs here: its replicas times torchrun's processes per
    replica, or mpirun's ranks."""
    return max(shape.total * shape.nproc_per_node, shape.world_size)


def check_process_limit(spec: JobSpec, limit: int | None) -> None:
    """Raise ResourceError, naming the limit and its config key, when the job would
    start more processes than ``limit`` (None: 4 × this machine's CPU cores)."""
    cores = os.cpu_count() or 1
    allowed = limit if limit is not None else 4 * cores
    shape = spec.shape
    wanted = process_count(shape)
    if wanted <= allowed:
        return
    per = (
        " × " + tr("{n} processes each", n=shape.nproc_per_node) if shape.nproc_per_node > 1 else ""
    )
    where = (
        f"{LIMIT_KEY} = {limit}"
        if limit is not None
        else f"{LIMIT_KEY}: " + tr("4 × {cores} CPU cores", cores=cores)
    )
    said = tr(
        "{shape} is {wanted} local processes, more than the local backend allows ({allowed}, {where})",
        shape=f"{shape.describe()}{per}", wanted=wanted, allowed=allowed, where=where,
    )  # fmt: skip
    raise ResourceError(
        f"{spec.name}: {said}",
        hint=tr("ask for fewer replicas, or raise the limit: `%ddl config {key}=N`", key=LIMIT_KEY),
    )


# -- finding -------------------------------------------------------------------------
def supervisor_process(jd: JobDir) -> psutil.Process | None:
    info = jd.supervisor()
    if not info:
        return None
    try:
        return ownership.identified(int(info["pid"]), float(info["create_time"]))
    except (KeyError, TypeError, ValueError):
        return None


def supervisor_alive(jd: JobDir) -> bool:
    if supervisor_process(jd) is not None:
        return True
    if jd.supervisor() is None:  # not started yet, or never will: judge by age
        try:
            return bool(time.time() - jd.handle_path.stat().st_mtime < START_GRACE)
        except OSError:
            return False
    return False


# -- stopping ------------------------------------------------------------------------
def stop_supervisor(jd: JobDir) -> None:
    """Ask the supervisor to cancel the job and wait until it has (it stops every
    replica itself); kill it when it does not answer (its replicas die with it)."""
    jd.cancel_path.touch()
    sup = supervisor_process(jd)
    if sup is None:
        return
    deadline = time.monotonic() + READY_WAIT
    while not (jd.supervisor() or {}).get("ready") and time.monotonic() < deadline:
        if ended(sup):
            return
        time.sleep(0.05)
    with contextlib.suppress(psutil.Error):
        sup.send_signal(signal.SIGTERM)
    if not wait_ended(sup, STOP_WAIT):
        with contextlib.suppress(psutil.Error):
            sup.kill()
        wait_ended(sup, 5.0)


def ended(p: psutil.Process) -> bool:
    """Whether ``p`` has exited. A supervisor that exited stays a zombie until the kernel
    that started it reaps it, which a kernel not following the job does not do soon;
    waiting from another process for the pid to vanish would wait for nothing."""
    try:
        return not p.is_running() or p.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def wait_ended(p: psutil.Process, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``p`` to exit (see ``ended``)."""
    deadline = time.monotonic() + timeout
    while not ended(p):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def stop_leftovers(jd: JobDir) -> None:
    """Stop every process recorded for the job, or marked as its own, that still runs
    (the supervisor is gone; pid and start time are checked before each signal)."""
    ownership.stop_recorded(jd.processes(), jd.root, grace=1.0)


def end_without_supervisor(status: JobStatus, state: JobState, message: str) -> JobStatus:
    """``status`` ended here because the supervisor cannot write it any more."""
    status.state, status.message, status.finished = state, message, time.time()
    for r in status.replicas:
        if not r.state.finished:
            r.state, r.pid = ReplicaState.TERMINATED, None
    return status


# -- unreadable files ----------------------------------------------------------------
def unreadable_status(jd: JobDir, alive: bool) -> JobStatus:
    """What can still be said of a job one of whose files is not what we wrote: its
    name, what is readable, and which file is not (``unreadable: spec.json (...)``)."""
    problems: list[str] = []

    def read(label: str, reader: Callable[[], T]) -> T | None:
        try:
            return reader()
        except Exception as e:  # noqa: BLE001 - say which file, whatever it raised
            why = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
            problems.append(f"{label} ({why})")
            return None

    spec = read("spec.json", jd.spec)
    handle = read("handle.json", jd.handle)
    status = read("status.json", jd.status)
    if status is None:
        status = JobStatus(name=jd.name, backend="local", strategy="?", state=JobState.PENDING)
        if spec is not None:
            status.strategy = spec.strategy
            status.replicas = [ReplicaStatus(r, i) for r, i in spec.shape.replica_ids]
        if handle is not None:
            status.created, status.notebook = handle.created, handle.notebook
    if not alive and not status.state.finished:
        status.state = JobState.FAILED
    what = problems[0] if problems else "a job file"
    status.message = f"unreadable: {what}; `%ddl delete {jd.name}` removes the job"
    return status
