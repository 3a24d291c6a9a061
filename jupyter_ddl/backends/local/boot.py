"""How a spare starts: the program it runs with ``python -c`` (``BOOT``), which imports
the framework before anything of jupyter_ddl and then serves as ``spare.main``.
``warm.start_spare`` starts it; its arguments are the module, the warm directory, the
idle seconds, the cold job it imports beside (``beside``) and the import's variables
(JSON)."""

from __future__ import annotations

__all__ = ["BOOT", "beside"]

# Run with ``python -c``: the framework is imported before anything of jupyter_ddl, so
# the modules present then are exactly a fresh replica's once it imported the framework
# (``forked.Fresh.keep``). The spare is started as a cold job starts, and that job's
# replicas want the CPU (first for the same import, then to train), so the import waits
# while that job runs (``beside``: its supervisor, pid and start time). Measured beside a
# 2-rank gloo job: an import at the normal weight from 5 s on cost it 0.953× by hand; one
# least favoured throughout (its session's autogroup at nice 19, taking only the CPU the
# job left idle) still 0.87–0.97×, as each short wait of a rank let the import in to be
# preempted again. The spare's session (its autogroup: Linux shares the CPU evenly
# between sessions whatever their threads' nice values) waits at nice 19; a job that
# finds the spare still starting puts it at nice 0 (``warm.promote``: a user waiting
# beats a job's last percent), which the spare reads as its cue, as it does the end of
# the job. It then imports at the normal weight. Without autogroups (containers) it
# imports at once, its import thread at nice 19 (a thread's nice value cannot be lowered
# back without privileges). The import happens once: the spare is never consumed
# (``spare.main``); the supervisors it forks get sessions of their own at the normal
# weight (``spare._session``).
BOOT = """\
import os, sys, threading
_got = []
def _autogroup(nice):
    # the session's autogroup nice value (see above); whether it was set
    for _ in range(30):
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write(nice)
            return True
        except BlockingIOError:  # Linux takes one such write per 0.1 s, machine-wide
            threading.Event().wait(0.11)
        except OSError:
            return False
    return False
def _beside(job):
    # whether the cold job that started this spare still runs ("pid:ticks", its
    # supervisor's pid and start time in clock ticks; "" for none)
    pid, _, ticks = job.partition(":")
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            fields = f.read().rpartition(b")")[2].split()
        return fields[0] not in (b"Z", b"X") and fields[19].decode() == ticks
    except (OSError, ValueError, IndexError):
        return False
def _imported(name):
    # What the import writes to fds 1 and 2 (TensorFlow's notices) is what a fresh
    # replica prints as it imports: kept for every forked one (forked.Fresh), and
    # copied to the spare's log.
    if not hasattr(os, "memfd_create"):
        __import__(name)
        return ["", ""]
    caps, saved = [os.memfd_create(f"ddl-import-{fd}") for fd in (1, 2)], []
    for fd, cap in zip((1, 2), caps):
        saved.append(os.dup(fd))
        os.dup2(cap, fd)
    try:
        __import__(name)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        out = []
        for fd, cap, old in zip((1, 2), caps, saved):
            os.dup2(old, fd)
            os.close(old)
            os.lseek(cap, 0, 0)
            data = os.read(cap, 1 << 16)
            os.close(cap)
            os.write(fd, data)
            out.append(data.decode(errors="replace"))
    return out
_job = sys.argv[4]
_grouped = bool(_job) and _autogroup("19")
def _warm_up():
    import json
    if _job and not _grouped:  # no autogroups: this thread's nice value, for good
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except (AttributeError, OSError):
            pass
    try:
        # the job's defaults for the import only: the spare's environment stays the
        # kernel's share, as the replicas' launch environment is compared with it
        added = {k: v for k, v in json.loads(sys.argv[5]).items() if k not in os.environ}
        os.environ.update(added)
        before = dict(os.environ)
        printed = _imported(sys.argv[1])
        # what the import wrote into os.environ (TensorFlow sets TF2_BEHAVIOR and
        # others): a fresh replica has it, so every forked one gets it back
        wrote = {k: v for k, v in os.environ.items() if before.get(k) != v}
        for k in added:
            del os.environ[k]
        keep = set(sys.modules)
        from jupyter_ddl.backends.local import spare
        _got.append(spare.warm_up(keep, sys.argv[2], wrote, printed))
    except BaseException as e:
        _got.append(e)
def _asked():
    # a job found this spare still starting: warm.promote put its autogroup at nice 0
    try:
        with open("/proc/self/autogroup") as f:
            return f.read().split()[-1] == "0"
    except (OSError, IndexError):
        return False
if _grouped:  # the import waits while the job that started it runs, unless asked
    while _beside(_job) and not _asked():
        threading.Event().wait(0.2)
    _autogroup("0")
# a thread of its own: without autogroups only its nice value is raised, never the
# main thread's, which forks the supervisors
_t = threading.Thread(target=_warm_up, name="ddl-warm-up")
_t.start()
_t.join()
if not _got or isinstance(_got[0], BaseException):
    print(f"jupyter-ddl: the warm interpreter could not start: {_got[0]!r}", file=sys.stderr)
    sys.exit(1)
from jupyter_ddl.backends.local import spare
sys.exit(spare.main(_got[0], sys.argv[2], float(sys.argv[3])))
"""


def beside(pid: int | None) -> str:
    """``BOOT``'s argument naming the cold job that starts a spare: its supervisor's pid
    and start time (clock ticks since boot, ``/proc/<pid>/stat``), so that a pid used
    again is not taken for it; "" when there is none or it is gone already."""
    if pid is None:
        return ""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rpartition(b")")[2].split()
        return f"{pid}:{fields[19].decode()}"
    except (OSError, IndexError, ValueError):
        return ""
