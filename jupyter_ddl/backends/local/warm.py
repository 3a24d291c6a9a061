"""Warm replica interpreters, the submitting side: which jobs may use one, handing a job
to a spare supervisor, starting the next spare.

A *spare* (``spare.py``) is a supervisor started ahead of time, in its own session like
any supervisor, that has imported a framework (torch or tensorflow, never touching a
device) and waits on a Unix socket in ``<data dir>/warm/`` (0700) for a job directory. Given one, it forks a child
that (in a session of its own) becomes that job's supervisor and forks the replicas from
itself (``forked.py``) instead of starting fresh interpreters, so they skip the
framework's import. The spare is never consumed: like a zygote it serves every job
after the first, back to back or side by side, from the same untouched state, and
imports the framework once, after the cold job beside it (see ``boot.BOOT``). It stays while a
job it started runs and ``local_warm_seconds`` after the last; a job that found none
starts one, of its framework, for the next.

Files per spare in the warm directory: ``<pid>.json`` (pid, start time, interpreter,
package, the module it imports: written when it is started, so a second one is not
started meanwhile) and
``<pid>.sock`` (there once it is ready). Both go when it exits.

The hand-over: the kernel sends the job directory, the job's share of its environment
(``launch.job_environ``, what a cold supervisor starts with), its umask and CPU affinity; the spare checks the job and
answers ``ok`` (it is then committed: its child is the job's supervisor) or why not;
the spare's child reads the request and answers, the spare never sees it.
A job that finds its spare still starting waits for it, up to ``READY_WAIT``. Anything
else (no spare, still not ready, no answer, the spare gone mid-way) leaves the job to a
cold supervisor, and its first replica's log says why: ``cold start: <reason>``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

from jupyter_ddl.backends.local import control, ownership
from jupyter_ddl.backends.local.boot import BOOT, beside
from jupyter_ddl.backends.local.forked import startup_env
from jupyter_ddl.backends.local.jobdir import DIR_MODE, JobDir, read_json, write_json
from jupyter_ddl.backends.local.launch import inherited_env
from jupyter_ddl.models import JobSpec

#: marks a spare: its warm directory, in its environment
SPARE_ENV = "JUPYTER_DDL_WARM_DIR"
#: the module a spare imports, by the strategies' framework it serves. MPI has none:
#: mpirun (or an MPIJob's launcher) starts the ranks, no spare of ours is their parent.
MODULES = {"pytorch": "torch", "tensorflow": "tensorflow"}
CONNECT_TIMEOUT = 1.0
ANSWER_TIMEOUT = 5.0  # a spare answers in milliseconds; one that does not is stopped
MAX_MESSAGE = 1 << 22
# A job that finds a spare still starting waits for it this long (``hand_over``): torch's
# import took 4 s on an idle 2-core machine here, TensorFlow's 8 s; a cold start as long.
READY_WAIT = 30.0
READY_POLL = 0.05
EXIT_GRACE = 1.0  # how long a spare that closed on us may take to finish exiting


def warm_dir(data_dir: Path) -> Path:
    return data_dir / "warm"


def socket_path(root: Path, pid: int) -> Path:
    return root / f"{pid}.sock"


def record_path(root: Path, pid: int) -> Path:
    return root / f"{pid}.json"


# -- which jobs ------------------------------------------------------------------------
def has_warm_path(spec: JobSpec, cell: str) -> bool:
    """Torch strategies can start warm (the shim imports torch); TensorFlow ones when
    the cell imports it (a spare of it holds half a gigabyte: not for a cell that never
    does); MPI ranks are mpirun's."""
    framework = spec.shape.strategy.framework
    if framework == "tensorflow":
        from jupyter_ddl.runtime.ddl_runtime import cell_uses_tensorflow

        return cell_uses_tensorflow(cell)
    return framework in MODULES


def module_of(spec: JobSpec) -> str:
    """The module a spare for ``spec``'s jobs imports (a job with a warm path)."""
    return MODULES[spec.shape.strategy.framework]


def cold_reason(spec: JobSpec, requirements: Sequence[str], python: str) -> str | None:
    """Why a job with a warm path starts cold whatever spare there is (None: it can
    start warm)."""
    shape = spec.shape
    if spec.command:
        return "the job runs its own command"
    if requirements:
        return "the job installs requirements (`!pip install` lines)"
    if shape.mpi_hosts is not None:
        return "mpirun starts the ranks"
    if shape.torchrun:
        per = f"--nproc-per-node {shape.nproc_per_node}" if shape.nproc_per_node > 1 else ""
        return f"torchrun starts the processes ({per or 'elastic'})"
    if os.path.abspath(python) != sys.executable:
        return f"the replicas run another interpreter (python = {python})"
    return None


# -- the hand-over ---------------------------------------------------------------------
def hand_over(
    root: Path,
    jd: JobDir,
    environ: Mapping[str, str],
    module: str = "torch",
    wait: float = READY_WAIT,
) -> tuple[int, float] | str:
    """Give ``jd`` to a ready spare that imported ``module``: its (pid, start time), now
    the job's supervisor; or why none took it (the job then needs a cold supervisor).
    A spare still starting is waited for, up to ``wait`` seconds."""
    spares = list(_spares(root, module))
    if not spares:
        return "no warm interpreter was running (one starts now, for the next job)"
    ready = _ready(root, spares)
    if not ready:
        # Still starting: the job waits for it, its import now at the normal weight (``promote``);
        # cold, both imports would be slower. One not promoted (no autogroups): no wait.
        waited = [s for s in spares if promote(*s)]
        since = time.monotonic()
        ready = _await_ready(root, waited, wait)
        if not ready:
            spent = f" ({time.monotonic() - since:.1f} s waited)" if waited and wait > 0 else ""
            if waited and not any(ownership.identified(*s) for s in waited):
                return "the warm interpreter ended before it was ready" + spent
            return "the warm interpreter is still starting" + spent
    request = {
        "job": str(jd.root), "environ": dict(environ), "umask": current_umask(),
        "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": sys.executable, "module": module,
    }  # fmt: skip
    why = ""
    for pid, started in ready:
        answer = _ask(root, pid, started, request)
        if isinstance(answer, tuple):
            return answer
        why = answer
    return why


def _ready(root: Path, spares: Iterable[tuple[int, float]]) -> list[tuple[int, float]]:
    return sorted((s for s in spares if socket_path(root, s[0]).exists()), reverse=True)


def _await_ready(
    root: Path, spares: list[tuple[int, float]], wait: float
) -> list[tuple[int, float]]:
    """The first of ``spares`` to get ready within ``wait`` seconds ([] if none did, or
    all ended: a spare whose import failed is not waited for to the end)."""
    deadline = time.monotonic() + wait
    while spares:
        if ready := _ready(root, spares):
            return ready
        if time.monotonic() >= deadline:
            break
        time.sleep(READY_POLL)
        spares = [s for s in spares if ownership.identified(*s) is not None]
    return []


def promote(pid: int, started: float) -> bool:
    """Tell a spare still waiting to import (``boot.BOOT``) that a job wants it: its
    session's autogroup back at nice 0, which its owner may do; whether that was done."""
    if ownership.identified(pid, started) is None:
        return False
    for _ in range(3):  # Linux takes one such write per 0.1 s, machine-wide
        try:
            with open(f"/proc/{pid}/autogroup", "w") as f:
                f.write("0")
            return True
        except BlockingIOError:
            time.sleep(0.11)
        except OSError:  # no autogroups (its thread's nice value stays), or gone
            return False
    return False


def _ask(root: Path, pid: int, started: float, request: dict[str, Any]) -> tuple[int, float] | str:
    try:
        with _connected(socket_path(root, pid)) as conn:
            peer_pid, peer_uid, _ = struct.unpack(
                "3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
            )
            if peer_pid != pid or peer_uid != os.getuid():
                return "the warm interpreter's socket belongs to another process"
            conn.sendall(json.dumps(request).encode() + b"\n")
            conn.settimeout(ANSWER_TIMEOUT)
            answer = json.loads(read_line(conn) or b"null")
    except (FileNotFoundError, ConnectionRefusedError):
        return _gone(root, pid, started, "the warm interpreter had stopped")
    except TimeoutError:
        _stop(pid, started)
        return _gone(root, pid, started, "the warm interpreter did not answer in time")
    except (OSError, ValueError):
        answer = None
    if isinstance(answer, dict) and answer.get("ok"):
        return int(answer["pid"]), float(answer["create_time"])
    if isinstance(answer, dict) and isinstance(answer.get("why"), str):
        return f"the warm interpreter refused the job ({answer['why']})"
    if _still_running(pid, started):  # the child it forked for the job ended unanswered
        return f"the warm interpreter's child ended before it answered (see {root / 'spare.log'})"
    return _gone(root, pid, started, "the warm interpreter ended during the hand-over")


def _still_running(pid: int, started: float) -> bool:
    """Whether the spare outlives the connection it closed without an answer. A dying
    process closes its files before it turns zombie, so the EOF can arrive while it
    still looks alive; give the exit a moment before calling it alive."""
    deadline = time.monotonic() + EXIT_GRACE
    while ownership.identified(pid, started) is not None:
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.02)
    return False


@contextlib.contextmanager
def _connected(path: Path) -> Iterator[socket.socket]:
    """A connection to the Unix socket ``path`` (a long path is reached through a
    directory descriptor: socket addresses are limited to about 100 bytes)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(CONNECT_TIMEOUT)
    with conn, short_address(path) as address:
        conn.connect(address)
        yield conn


@contextlib.contextmanager
def short_address(path: Path) -> Iterator[str]:
    if len(os.fsencode(str(path))) < 100:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def read_line(conn: socket.socket) -> bytes:
    """One newline-ended message (at most ``MAX_MESSAGE`` bytes; b"" when closed)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        data += chunk
        if len(data) > MAX_MESSAGE:
            raise ValueError("message too long")
    return data


def current_umask() -> int:
    """This process's umask, read without changing it where Linux tells it."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


# -- spares ----------------------------------------------------------------------------
def _spares(root: Path, module: str) -> Iterator[tuple[int, float]]:
    """(pid, start time) of the live spares of this interpreter and package that
    imported ``module``; the records of dead ones are removed."""
    if not root.is_dir():
        return
    for path in root.glob("*.json"):
        info = read_json(path)
        try:
            pid, started = int(info["pid"]), float(info["create_time"])  # type: ignore[index]
        except (TypeError, KeyError, ValueError):
            continue
        if ownership.identified(pid, started) is None:
            _forget(root, pid)
        elif (
            info.get("python") == sys.executable  # type: ignore[union-attr]
            and info.get("package") == control.PACKAGE_PARENT  # type: ignore[union-attr]
            and info.get("module", "torch") == module  # type: ignore[union-attr]
        ):
            yield pid, started


def _gone(root: Path, pid: int, started: float, why: str) -> str:
    if ownership.identified(pid, started) is None:
        _forget(root, pid)
    return why


def _forget(root: Path, pid: int) -> None:
    for path in (socket_path(root, pid), record_path(root, pid)):
        path.unlink(missing_ok=True)


def _stop(pid: int, started: float) -> None:
    p = ownership.identified(pid, started)
    if p is not None:
        ownership.stop([p], grace=1.0)


def start_spare(
    root: Path,
    seconds: float,
    environ: Mapping[str, str],
    passthrough: Iterable[str] = (),
    module: str = "torch",
    job: JobDir | None = None,
) -> subprocess.Popen[bytes] | None:
    """Start a spare that imports ``module`` unless one of this interpreter is running
    or starting. It gets ``spare_environ``: the framework is imported as its replicas
    will import it, and nothing else of this kernel's environment is there for another
    kernel's jobs. ``job``: the cold job that starts it (a spare is started only beside
    one); the import waits while that job's supervisor runs (``boot.BOOT``)."""
    if any(True for _ in _spares(root, module)):
        return None
    root.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    os.chmod(root, DIR_MODE)
    env = control.with_package(spare_environ(environ, passthrough))
    env[SPARE_ENV] = str(root)
    fd = os.open(root / "spare.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with open(fd, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-u", "-c", BOOT, module, str(root), f"{seconds:g}",
             beside(_supervisor_pid(job)), json.dumps(import_defaults(module))],
            cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        started = psutil.Process(proc.pid).create_time()
    except psutil.Error:
        return proc
    write_json(
        record_path(root, proc.pid),
        {"pid": proc.pid, "create_time": started, "python": sys.executable,
         "package": control.PACKAGE_PARENT, "module": module},
    )  # fmt: skip
    return proc


def _supervisor_pid(job: JobDir | None) -> int | None:
    pid = (job.supervisor() or {}).get("pid") if job is not None else None
    return pid if isinstance(pid, int) else None


def import_defaults(module: str) -> dict[str, str]:
    """The variables a replica imports ``module`` with unless the job sets them (the
    runtime shim sets them before its import), so the spare imports it alike; they are
    not part of the spare's environment, which is compared with each launch's."""
    if module == "tensorflow":
        from jupyter_ddl.runtime.ddl_runtime import tensorflow_import_env

        return tensorflow_import_env()
    return {}


def spare_environ(environ: Mapping[str, str], passthrough: Iterable[str] = ()) -> dict[str, str]:
    """What a spare starts with: of what a replica keeps (``launch.inherited_env``), the
    variables the interpreter and the framework read as they load (``forked.startup_env``,
    equal for every job it may serve) and PATH. A spare may serve another kernel's job:
    proxies, passed-through names and secrets are the job's to bring (the hand-over)."""
    kept = inherited_env(environ, passthrough)
    env = startup_env(kept)
    if "PATH" in kept:
        env["PATH"] = kept["PATH"]
    return env


def stop_spares(root: Path) -> None:
    """Stop every spare waiting in ``root`` (those that took a job are supervisors)."""
    if not root.is_dir():
        return
    procs = []
    for path in root.glob("*.json"):
        info = read_json(path)
        with contextlib.suppress(TypeError, KeyError, ValueError):
            p = ownership.identified(int(info["pid"]), float(info["create_time"]))  # type: ignore[index]
            if p is not None:
                procs.append(p)
    ownership.stop(procs, grace=2.0)
    for path in [*root.glob("*.json"), *root.glob("*.sock")]:
        path.unlink(missing_ok=True)
