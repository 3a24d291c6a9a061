"""A spare supervisor: a warm interpreter that forks every later job's supervisor.

Started by ``warm.start_spare`` (``python -c boot.BOOT``) in its own session, with only
the variables the framework reads as it loads (``warm.spare_environ``). It has imported
its framework, torch or tensorflow (no device touched), before anything of jupyter_ddl, noted what a fresh replica holds at that point
(``forked.Fresh``), and waits on ``<pid>.sock`` in the warm directory. Given a
connection (``warm.hand_over``) it forks, and the child, in a session of its own, reads
the job, checks it, answers and from then on *is* the job's supervisor, exactly as
``control.start_supervisor`` would have made one: the job's environment (nothing left of
the one the spare started with, see ``scrub_initial_environ``) and the kernel's CPU affinity, the job directory as working directory, output to
``supervisor.log``, the subreaper of everything below it, its own ``supervisor.json``;
then ``supervisor.run_job`` with replicas forked from it. The spare goes on listening
(``main``); it exits ``local_warm_seconds`` after the last job it forked ended, or when
its socket is removed.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import socket
import struct
import subprocess
import sys
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import psutil

from jupyter_ddl.backends.local import control, ownership, supervisor_main, warm
from jupyter_ddl.backends.local.forked import Fresh
from jupyter_ddl.backends.local.jobdir import FILE_MODE, JobDir, jobs_root

POLL = 1.0  # seconds between looks at the idle time, a stop and the socket file


def warm_up(keep: set[str], root: str, import_env: dict[str, str], printed: list[str]) -> Fresh:
    """What a fresh replica holds (``keep``: the modules loaded once the framework
    was; ``import_env``: the variables importing it set; ``printed``: what it wrote to
    stdout and stderr); its ``sys.path`` is asked of a fresh interpreter in the
    replicas' environment."""
    env = {k: v for k, v in control.replica_environ().items() if k != warm.SPARE_ENV}
    probe = subprocess.run(
        [sys.executable, "-c", "import json, sys; print(json.dumps(sys.path))"],
        env=env, cwd=root, stdin=subprocess.DEVNULL, capture_output=True, check=True, timeout=120,
    )  # fmt: skip
    path = json.loads(probe.stdout)
    # a script's directory leads sys.path (the child puts main.py's there), unless
    # PYTHONSAFEPATH says not to
    tail = path if env.get("PYTHONSAFEPATH") else path[1:]
    return Fresh.capture(keep, tail, env, import_env, (printed[0], printed[1]))


def main(fresh: Fresh, root_dir: str, idle: float) -> int:
    """Serve hand-overs until idle for ``idle`` seconds: the spare is never consumed.

    Like a zygote it forks, per connection, a child that reads the request, and that
    child (in a session of its own) either refuses or becomes the job's supervisor. The
    spare itself never reads a request, so nothing of a job (its environment, its
    secrets) is ever in its memory, and every job starts from the same untouched state.
    It stays while any job it started runs and for ``idle`` seconds after the last."""
    stop, wake = supervisor_main.handle_signals()
    root = Path(root_dir)
    listener = _listen(root)
    children: set[int] = set()
    last = time.monotonic()
    try:
        while not stop.is_set():
            if _reap(children):  # ended children are collected within POLL seconds
                last = time.monotonic()
            if not children and time.monotonic() >= last + idle:
                return 0
            if not warm.socket_path(root, os.getpid()).exists():
                return 0  # removed: asked to go (its jobs' supervisors go on)
            try:
                ready, _, _ = select.select([listener], [], [], POLL)
            except InterruptedError:
                continue
            if not ready:
                continue
            try:
                conn, _ = listener.accept()
            except OSError:  # the kernel gave up connecting meanwhile
                continue
            try:
                pid = _session()
            except OSError:  # no fork now: the kernel reads the closed connection, goes cold
                conn.close()
                continue
            if pid == 0:
                _child(conn, listener, root, fresh, stop, wake)
            conn.close()
            children.add(pid)
            last = time.monotonic()
        return 0
    finally:
        listener.close()
        _forget(root)


def _child(
    conn: socket.socket, listener: socket.socket, root: Path, fresh: Fresh, stop: Any, wake: Any
) -> NoReturn:
    """The spare's child: the job's supervisor, or a refusal and out. It never returns
    into the spare's loop (whose cleanup would remove the spare's socket)."""
    code = 1
    stop.clear()  # a signal the spare had just received was the spare's, not this job's
    try:
        listener.close()
        with conn:
            job = _answer(conn, root, fresh)
        if job is None:
            code = 0
        else:
            code = _take(job[0], job[1], fresh, stop, wake)
    except BaseException:  # noqa: BLE001 - said in the log, then out
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _reap(children: set[int]) -> bool:
    """Collect the children that ended; whether any did."""
    ended = False
    for pid in list(children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            children.discard(pid)
            ended = True
    return ended


def _listen(root: Path) -> socket.socket:
    """Listen on ``<pid>.sock``: bound under another name first, so the name appears
    only once connections are accepted."""
    me = os.getpid()
    tmp, final = root / f".{me}.sock", warm.socket_path(root, me)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with warm.short_address(tmp) as address:
        listener.bind(address)  # under the spare's umask: 077 inside a 0700 directory
    listener.listen(8)
    os.replace(tmp, final)
    return listener


def _forget(root: Path) -> None:
    me = os.getpid()
    for path in (warm.socket_path(root, me), warm.record_path(root, me)):
        with contextlib.suppress(OSError):
            path.unlink()


def _answer(conn: socket.socket, root: Path, fresh: Fresh) -> tuple[JobDir, dict[str, Any]] | None:
    """In the spare's child: read a hand-over and answer it; the job and the request
    once committed to it, None when refused."""
    conn.settimeout(warm.ANSWER_TIMEOUT)
    try:
        _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        request = json.loads(warm.read_line(conn) or b"null")
        why = _refusal(request, uid, root, fresh.keep)
        if why is not None:
            conn.sendall(json.dumps({"ok": False, "why": why}).encode() + b"\n")
            return None
        me = psutil.Process()
        conn.sendall(
            json.dumps({"ok": True, "pid": me.pid, "create_time": me.create_time()}).encode()
            + b"\n"
        )
    except (OSError, ValueError):
        return None
    return JobDir(Path(request["job"])), request


def _session() -> int:
    """Fork a child into a session of its own; its pid here, 0 in it.

    The spare imported the framework in a session whose autogroup it made the least
    favoured (``boot.BOOT``), so that the import never slowed a job. A supervisor left
    there would get almost no CPU beside busy replicas, its pipes would fill and stall
    them; a session leader cannot start a new session, but its child can, and a new
    session comes with a new autogroup at the normal weight. The fork happens in the
    main thread, with no other thread running, as the replicas' forks do."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
    return pid


def _refusal(request: Any, uid: int, root: Path, fresh_modules: frozenset[str]) -> str | None:
    if uid != os.getuid():
        return "another user"
    if not isinstance(request, dict) or not isinstance(request.get("environ"), dict):
        return "not a hand-over"
    if request.get("python") != sys.executable:
        return "another interpreter"
    if request.get("module", "torch") not in fresh_modules:
        return f"this warm interpreter has not imported {request.get('module')}"
    job = Path(str(request.get("job")))
    if job.parent != jobs_root(root.parent) or not JobDir(job).exists():
        return f"{job} is no job of {root.parent}"
    if JobDir(job).supervisor_path.exists():
        return f"{job.name} has a supervisor already"
    return None


def scrub_initial_environ(keep: Mapping[str, str]) -> None:
    """Overwrite, in the environment block this process was started with (what
    ``/proc/<pid>/environ`` shows, and what every process forked from it inherits),
    each entry that ``keep`` does not hold with the same value. ``os.environ`` no
    longer points there; an entry equal to one kept is left, as a library may still
    hold a pointer into it."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rpartition(b")")[2].split()
        # env_start and env_end: fields 50 and 51 of stat(5), counted after the name
        start, end = int(fields[47]), int(fields[48])
    except (OSError, ValueError, IndexError):
        return
    if not 0 < start < end or end - start > 1 << 24:
        return
    block = ctypes.string_at(start, end - start)
    offset = 0
    for entry in block.split(b"\0"):
        name, _, value = entry.partition(b"=")
        wanted = keep.get(os.fsdecode(name))
        if entry and (wanted is None or os.fsencode(wanted) != value):
            ctypes.memset(start + offset, 0, len(entry))
        offset += len(entry) + 1


def _take(jd: JobDir, request: dict[str, Any], fresh: Fresh, stop: Any, wake: Any) -> int:
    """Become ``jd``'s supervisor, as ``control.start_supervisor`` makes one."""
    # the request leaves this frame: a replica forked below may walk its callers' frames
    environ = request.pop("environ")
    env = control.supervisor_env(jd, {str(k): str(v) for k, v in environ.items()})
    os.environ.clear()
    os.environ.update(env)
    scrub_initial_environ(env)
    del environ, env
    os.chdir(jd.root)
    with contextlib.suppress(OSError, TypeError, ValueError, AttributeError):
        os.sched_setaffinity(0, [int(c) for c in request["affinity"]])
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    fd = os.open(jd.supervisor_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.umask(0o077)
    ownership.become_subreaper()
    supervisor_main.announce(jd, warm=True, spare=os.getppid())
    code = supervisor_main.run_job(jd, stop, wake, int(request.get("umask", 0o022)), fresh=fresh)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)  # the framework's own shutdown would only cost time: all is written
