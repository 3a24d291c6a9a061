"""Replicas forked from a warm interpreter, each behaving like a fresh ``python -u main.py``.

A warm supervisor (see ``spare``) has imported torch or tensorflow without touching a
device. A replica forked from it skips the import (most of a replica's start-up) but
starts from the supervisor's state, so before the job's code runs the child makes
itself what a fresh interpreter started by the supervisor would be:

* owned like any replica: the parent-death signal (``ownership``), its own session;
  signal handlers the supervisor installed reset, the signal mask cleared;
* stdin ``/dev/null``, stdout and stderr the pipes the supervisor's pump reads, every
  other inherited descriptor closed;
* its working directory, the kernel's umask, and ``os.environ`` replaced wholesale by
  the launch's environment (``launch.plan``), so ``CUDA_VISIBLE_DEVICES`` is set before
  anything can touch CUDA;
* ``sys.modules`` holding only the stdlib and what importing the framework loaded
  (``Fresh.keep``): jupyter_ddl, psutil and anything else the supervisor imported are
  gone, so the runtime shim and the cell import fresh; ``sys.path``, ``sys.argv``,
  the standard streams, ``__main__``, the warnings filters and the interpreter hooks
  are those of a fresh interpreter.

Objects the child drops are kept referenced and the garbage collector frozen, so no
finaliser of the supervisor's (a file object, a selector) ever closes a descriptor
number the child has reused. Whatever goes wrong before the job's code runs, the
child ``exec``s the launch's command instead: a cold start, said on its stderr.

Variables the framework or the interpreter read while loading (``STARTUP_PREFIXES``)
cannot change after the import: a launch whose values differ from the warm
interpreter's starts cold (``why_cold``).

A fork copies only the forking thread: one taken while the framework's runtime runs
threads of its own (TensorFlow's once it ran an op or made a strategy) could leave a
lock held forever in the child. Importing either framework starts none (the one
native thread after ``import numpy`` is OpenBLAS's pool, which stops itself around a
fork), and a replica is forked only when the supervisor runs no thread that Python did
not start (``why_not_now``); otherwise it starts cold and says so.
"""

from __future__ import annotations

import builtins
import gc
import importlib
import importlib.machinery
import io
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
import types
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, NoReturn

from jupyter_ddl.backends.local import ownership
from jupyter_ddl.backends.local.launch import Launch

#: variables read when the interpreter starts or the framework loads (libgomp and
#: OpenBLAS read their thread settings when loaded): they must be what the warm
#: interpreter started with. PYTHONUNBUFFERED is the ``-u`` the child recreates.
STARTUP_NAMES = frozenset({"HOME", "TZ", "LANG", "LANGUAGE", "GLIBC_TUNABLES"})
STARTUP_PREFIXES = (
    "PYTHON", "LC_", "LD_", "OMP_", "GOMP_", "KMP_", "MKL_", "OPENBLAS_", "TORCH",
    "PYTORCH_", "MALLOC_", "DNNL_", "ONEDNN_", "VIRTUAL_ENV", "CONDA_", "TF_", "KERAS_",
)  # fmt: skip
#: read only once the job's code runs (TF_CONFIG: when a strategy is made), and
#: different for every replica
PER_REPLICA = frozenset({"TF_CONFIG"})
EMULATED = frozenset({"PYTHONUNBUFFERED"})


def startup_env(env: Mapping[str, str]) -> dict[str, str]:
    """The part of ``env`` fixed once the interpreter and the framework are loaded."""
    return {
        k: v
        for k, v in env.items()
        if (k in STARTUP_NAMES or k.startswith(STARTUP_PREFIXES))
        and k not in EMULATED
        and k not in PER_REPLICA
    }


def foreign_threads(tasks: Iterable[int], python_threads: Iterable[int | None]) -> list[int]:
    """Of a process's threads (``tasks``: ids under ``/proc/<pid>/task``), those that
    Python did not start (``python_threads``: their native ids)."""
    ours = {t for t in python_threads if t is not None}
    return sorted(t for t in tasks if t not in ours)


def running_foreign_threads() -> list[int]:
    """This process's threads that Python did not start and that still run."""
    tasks = [int(t) for t in os.listdir("/proc/self/task")]
    # After a fork Python (3.11) keeps the forking thread's old native id: the calling
    # thread's own is asked of the kernel, every other one's started after the fork.
    me = threading.current_thread()
    ids = [threading.get_native_id(), *(t.native_id for t in threading.enumerate() if t is not me)]
    found = foreign_threads(tasks, ids)
    # a Python thread that ended between the two looks is gone from /proc by now
    return [t for t in found if os.path.exists(f"/proc/self/task/{t}")]


def startup_difference(warm: Mapping[str, str], launch: Mapping[str, str]) -> str | None:
    """The first variable (by name) set differently for the launch than for the warm
    interpreter, or None."""
    a, b = startup_env(warm), startup_env(launch)
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    return differ[0] if differ else None


@dataclass
class Fresh:
    """What a fresh replica interpreter holds, noted by the warm one when it had just
    imported the framework (and nothing of jupyter_ddl yet)."""

    python: str
    keep: frozenset[str]  # modules a fresh replica has once it imported the framework
    path_tail: list[str]  # sys.path after the script's directory, as a fresh one has it
    env: dict[str, str]  # the environment the framework was imported in (replica view)
    import_env: dict[str, str] = field(default_factory=dict)  # what the import set
    import_output: tuple[str, str] = ("", "")  # what it printed (stdout, stderr)
    meta_path: list[Any] = field(default_factory=list)
    path_hooks: list[Any] = field(default_factory=list)
    filters: list[Any] = field(default_factory=list)
    recursion: int = 1000
    switch: float = 0.005

    @classmethod
    def capture(
        cls,
        keep: set[str],
        path_tail: list[str],
        env: Mapping[str, str],
        import_env: Mapping[str, str] | None = None,
        import_output: tuple[str, str] = ("", ""),
    ) -> Fresh:
        return cls(
            python=sys.executable, keep=frozenset(keep), path_tail=list(path_tail),
            env=dict(env), import_env=dict(import_env or {}), import_output=import_output,
            meta_path=list(sys.meta_path),
            path_hooks=list(sys.path_hooks),
            filters=list(warnings.filters), recursion=sys.getrecursionlimit(),
            switch=sys.getswitchinterval(),
        )  # fmt: skip


def why_cold(launch: Launch, fresh: Fresh) -> str | None:
    """Why this replica cannot be forked from the warm interpreter (None: it can)."""
    argv = launch.argv or []
    if argv[1:3] == ["-m", "torch.distributed.run"]:
        return "torchrun starts this replica's processes"
    if argv[:1] == ["mpirun"]:
        return "mpirun starts the ranks"
    if len(argv) != 3 or argv[1] != "-u":
        return "the job runs its own command"
    if argv[0] != fresh.python:
        return f"the replicas run another interpreter ({argv[0]})"
    name = startup_difference(fresh.env, launch.env)
    if name is not None:
        return f"{name} is not what the warm interpreter was started with"
    for name, value in sorted(fresh.import_env.items()):
        if launch.env.get(name, value) != value:
            return f"the job sets {name}, which importing the framework sets to {value}"
    return None


def _thread_name(tid: int) -> str:
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            return f.read().strip() or str(tid)
    except OSError:
        return str(tid)


def why_not_now() -> str | None:
    """Why this process may fork no replica at this moment (None: it may)."""
    if threads := running_foreign_threads():
        names = ", ".join(sorted({_thread_name(t) for t in threads}))
        return f"the warm interpreter runs threads Python did not start ({names})"
    return None


class ForkedProcess:
    """A forked replica, answering what the supervisor asks of a ``Popen``."""

    def __init__(self, pid: int, stdout: IO[bytes], stderr: IO[bytes]) -> None:
        self.pid, self.stdout, self.stderr = pid, stdout, stderr
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere (psutil's wait): as Popen does
                self.returncode = 0
                return 0
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0)
            time.sleep(0.01)
        return code


def fork_replica(fresh: Fresh, launch: Launch, cwd: str, umask: int) -> ForkedProcess:
    """Start ``launch`` as a child of this process (call from the main thread: the
    parent-death signal follows the forking thread)."""
    for stream in (sys.stdout, sys.stderr):  # nothing of ours may reach the child's pipes
        if stream is not None:
            stream.flush()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    parent = os.getpid()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded fork"
            pid = os.fork()
    except OSError:
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        raise
    if pid == 0:
        _child(fresh, launch, cwd, umask, parent, out_w, err_w)
    os.close(out_w)
    os.close(err_w)
    return ForkedProcess(pid, os.fdopen(out_r, "rb"), os.fdopen(err_r, "rb"))


# -- the child ---------------------------------------------------------------------------
def _child(
    fresh: Fresh, launch: Launch, cwd: str, umask: int, parent: int, out_w: int, err_w: int
) -> NoReturn:
    argv = launch.argv or []
    try:
        ownership.die_with_parent(parent)()
        os.setsid()
        _reset_signals()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.closerange(3, _fd_limit())
        os.chdir(cwd)
        os.umask(umask)
        os.environ.clear()
        os.environ.update(launch.env)
        os.environ.update(fresh.import_env)  # as the framework's import left a fresh one
    except BaseException:  # noqa: BLE001 - not even a replica: nothing can be said
        os._exit(127)
    try:
        main, kept = _become_fresh(fresh, argv[2])
        with open(argv[2], "rb") as f:
            code = compile(f.read(), argv[2], "exec")
    except BaseException as e:  # noqa: BLE001 - start it the ordinary way instead
        os.write(2, f"jupyter-ddl: cold start: the warm interpreter failed ({e!r})\n".encode())
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    for fd, text in zip((1, 2), fresh.import_output, strict=True):  # a fresh import prints it
        if text:
            os.write(fd, text.encode(errors="replace"))
    status = 0
    try:
        exec(code, main.__dict__)
    except SystemExit as e:
        status = _exit_status(e.code)
    except BaseException:  # noqa: BLE001 - what the interpreter does with an uncaught error
        traceback.print_exc()
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    del kept
    os._exit(status)


def _fd_limit() -> int:
    try:
        return max(3, os.sysconf("SC_OPEN_MAX"))
    except (ValueError, OSError):
        return 65536


def _reset_signals() -> None:
    """The dispositions a fresh interpreter starts with: the supervisor's handlers
    off, SIGINT raising KeyboardInterrupt, SIGPIPE and SIGXFSZ ignored, none blocked."""
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    signal.set_wakeup_fd(-1)
    for sig in signal.valid_signals():
        try:
            handler = signal.getsignal(sig)
        except (OSError, ValueError):
            continue
        if callable(handler) and handler is not signal.default_int_handler:
            signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_IGN)


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _purged(name: str, keep: frozenset[str]) -> bool:
    if name in keep or name in ("__main__", "__mp_main__"):
        return False
    return name.partition(".")[0] not in sys.stdlib_module_names


def _become_fresh(fresh: Fresh, entry: str) -> tuple[types.ModuleType, list[Any]]:
    """Make this process's interpreter state a fresh one's about to run ``entry``;
    returns the new ``__main__`` and what must stay referenced until the exit."""
    gc.freeze()  # nothing the supervisor left unreachable is finalised here
    kept: list[Any] = [sys.modules.pop(n) for n in list(sys.modules) if _purged(n, fresh.keep)]
    kept += [sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__]
    sys.path[:] = [os.path.dirname(entry), *fresh.path_tail]
    sys.path_importer_cache.clear()
    sys.meta_path[:] = fresh.meta_path
    sys.path_hooks[:] = fresh.path_hooks
    importlib.invalidate_caches()
    warnings.filters[:] = fresh.filters  # type: ignore[index]
    warnings._filters_mutated()  # type: ignore[attr-defined]
    sys.excepthook, sys.displayhook = sys.__excepthook__, sys.__displayhook__
    sys.unraisablehook, sys.breakpointhook = sys.__unraisablehook__, sys.__breakpointhook__
    threading.excepthook = threading.__excepthook__
    sys.setrecursionlimit(fresh.recursion)
    sys.setswitchinterval(fresh.switch)
    sys.argv = [entry]
    sys.orig_argv = [fresh.python, "-u", entry]
    streams = [_stream(fd, like) for fd, like in enumerate(kept[-3:])]
    sys.stdin, sys.stdout, sys.stderr = streams
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams  # type: ignore[misc]
    main = types.ModuleType("__main__")
    main.__dict__.update(
        __file__=entry, __cached__=None, __builtins__=builtins, __annotations__={},
        __spec__=None, __loader__=importlib.machinery.SourceFileLoader("__main__", entry),
    )  # fmt: skip
    sys.modules["__main__"] = main
    if "__mp_main__" in sys.modules:  # multiprocessing's alias of the main module
        sys.modules["__mp_main__"] = main
    return main, kept


def _stream(fd: int, like: Any) -> io.TextIOWrapper:
    """A standard stream as ``python -u`` makes it (unbuffered writes), in the
    encoding the warm interpreter was given for the same environment."""
    encoding = getattr(like, "encoding", None) or "utf-8"
    errors = getattr(like, "errors", None) or "strict"
    if fd == 0:
        return io.TextIOWrapper(open(fd, "rb", closefd=False), encoding, errors)
    raw = open(fd, "wb", buffering=0, closefd=False)  # noqa: SIM115 - the process's stdout
    return io.TextIOWrapper(raw, encoding, errors, write_through=True)
