"""Who owns a local job's processes, and how every one of them is stopped.

Three mechanisms, so nothing a job starts outlives it:

* The supervisor is a *child subreaper* (Linux ``PR_SET_CHILD_SUBREAPER``): a process
  orphaned anywhere below it, even one that started a new session, is re-parented to
  the supervisor instead of init, so ``descendants()`` of the supervisor is the whole
  job, and the job's end stops it.
* Each replica gets ``PR_SET_PDEATHSIG`` (``die_with_parent``): when the supervisor
  dies (``kill -9``), its direct children die with it.
* Every process the supervisor saw below it is recorded with its start time
  (``processes.json`` in the job directory) and carries the job's marker variable
  (``MARKER_ENV``), so a cancel or delete after the supervisor died still finds and
  stops them, checking each one's identity (pid *and* start time) before signalling.

A replica forked by the supervisor itself (no exec) falls under the same rules: call
``die_with_parent(os.getppid())`` in the child right after the fork, and ``record``
its pid; the subreaper and the descendant scan need nothing more.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
from collections.abc import Callable, Iterable
from pathlib import Path

import psutil

#: set in the supervisor and every replica to the job directory: the job's marker
MARKER_ENV = "JUPYTER_DDL_JOB_DIR"
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
#: two records of one process agree on its start time to well within this
SAME_START = 0.05

_libc: ctypes.CDLL | None = None


def _prctl() -> Callable[..., int] | None:
    """libc's prctl, loaded once in the parent (never in a freshly forked child)."""
    global _libc
    if not hasattr(os, "sched_getaffinity"):  # not Linux
        return None
    if _libc is None:
        try:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        except OSError:
            return None
    fn: Callable[..., int] = _libc.prctl
    return fn


def become_subreaper() -> bool:
    """Make this process the reaper of every orphan below it; False where unsupported."""
    prctl = _prctl()
    return prctl is not None and prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def die_with_parent(parent: int, sig: int = signal.SIGKILL) -> Callable[[], None]:
    """A ``preexec_fn`` that makes the child get ``sig`` when ``parent`` dies.

    The signal follows the *thread* that forked the child: start replicas from the
    supervisor's main thread. A parent that died between the fork and the prctl
    cannot signal any more, so the child checks and leaves at once."""
    prctl = _prctl()

    def preexec() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


# -- identity ------------------------------------------------------------------------
def identified(pid: int, started: float) -> psutil.Process | None:
    """The live process ``pid`` if it is the one that started at ``started``."""
    try:
        p = psutil.Process(pid)
        if abs(p.create_time() - started) < SAME_START and p.status() != psutil.STATUS_ZOMBIE:
            return p
    except (psutil.Error, ValueError, TypeError):
        pass
    return None


def descendants(pid: int | None = None) -> list[psutil.Process]:
    """Every live process below ``pid`` (default: this one)."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def marked(job_dir: Path, *, exclude: Iterable[int] = ()) -> list[psutil.Process]:
    """Live processes carrying ``MARKER_ENV=job_dir`` (readable ones: our own user's)."""
    marker, skip = str(job_dir), {os.getpid(), *exclude}
    out = []
    for p in psutil.process_iter():
        if p.pid in skip:
            continue
        try:
            if p.environ().get(MARKER_ENV) == marker and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except (psutil.Error, OSError):
            continue
    return out


def working_in(job_dir: Path) -> list[psutil.Process]:
    """Live processes (our own user's) whose working directory is ``job_dir``: a
    supervisor a spare forked works there from its first moments, before any record or
    marker of it can be read."""
    where, out = str(job_dir), []
    for p in psutil.process_iter():
        if p.pid == os.getpid():
            continue
        try:
            if p.cwd() == where and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except (psutil.Error, OSError):
            continue
    return out


# -- stopping --------------------------------------------------------------------------
def stop(procs: Iterable[psutil.Process], grace: float = 2.0) -> list[psutil.Process]:
    """SIGTERM every process, SIGKILL what is left after ``grace`` seconds (one wait
    for all of them); returns the processes that were still alive at the end."""
    procs = [p for p in procs if p.pid != os.getpid()]
    for p in procs:
        _signal(p, signal.SIGTERM)
    _, alive = psutil.wait_procs(procs, timeout=grace) if procs else ([], [])
    for p in alive:
        _signal(p, signal.SIGKILL)
    _, left = psutil.wait_procs(alive, timeout=2.0) if alive else ([], [])
    return left


def _signal(p: psutil.Process, sig: int) -> None:
    try:
        p.send_signal(sig)  # psutil checks the pid still names the same process
    except psutil.Error:
        pass


def own_children(procs: Iterable[psutil.Process]) -> list[psutil.Process]:
    """Those of ``procs`` whose parent is this process (read from each, not from a
    listing of the machine's)."""
    me, out = os.getpid(), []
    for p in procs:
        try:
            if p.ppid() == me:
                out.append(p)
        except psutil.Error:
            continue
    return out


def reap_orphans(keep: set[int], children: list[psutil.Process] | None = None) -> int:
    """Collect the exit status of children that are not ours to wait for (orphans
    re-parented to this subreaper), so none stays a zombie; ``keep``: pids a
    ``subprocess.Popen`` waits for; ``children``: this process's, when already listed.
    Returns how many were reaped."""
    reaped = 0
    if children is None:
        try:
            children = psutil.Process().children()
        except psutil.Error:
            return 0
    for child in children:
        if child.pid in keep:
            continue
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                continue
            if os.waitpid(child.pid, os.WNOHANG)[0]:
                reaped += 1
        except (psutil.Error, ChildProcessError, OSError):
            continue
    return reaped


def stop_recorded(
    records: Iterable[tuple[int, float]], job_dir: Path, grace: float = 2.0
) -> list[psutil.Process]:
    """Stop every recorded process that is still the same process, and every process
    carrying the job's marker; returns those that could not be stopped."""
    found: dict[int, psutil.Process] = {}
    for pid, started in records:
        p = identified(pid, started)
        if p is not None:
            found[p.pid] = p
    for p in marked(job_dir):
        found.setdefault(p.pid, p)
    return stop(found.values(), grace)
