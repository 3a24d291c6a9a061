"""How a spare starts: the program it runs with ``python -c`` (``BOOT``), which imports
the framework before anything of jupyter_ddl and then serves as ``spare.main``.
``warm.start_spare`` starts it; its arguments are the module, the warm directory, the
idle seconds, ``PROMOTE`` and the import's variables (JSON)."""

from __future__ import annotations

__all__ = ["BOOT", "PROMOTE"]

# Run with ``python -c``: the framework is imported before anything of jupyter_ddl, so
# the modules present then are exactly a fresh replica's once it imported the framework
# (``forked.Fresh.keep``). The spare is started as a job starts, and that job's replicas
# are busy importing the same framework, so the import begins least favoured: the
# spare's session (its autogroup: Linux shares the CPU evenly between sessions whatever
# their threads' nice values, and a spare importing at the normal weight beside a cold
# 2-rank job made it about 50 % slower) at nice 19 (``/proc/self/autogroup``). It then
# takes little CPU that anybody else wants. Waiting for an idle core instead, as an
# earlier version did, left the spare unready on any busy machine (a training job,
# other users), and a least-favoured import hardly moves on a saturated one: after
# PROMOTE seconds (the starting job is past its own import by then) the autogroup goes
# back to the normal weight, which any process may do (SCHED_IDLE, or a thread's nice
# value, could not be undone without privileges). Without autogroups (containers) the
# import thread's nice value of 19 is all there is, for the whole import. The import
# happens once: the spare is never consumed (``spare.main``); the supervisors it forks
# get sessions of their own at the normal weight (``spare._session``).
PROMOTE = 5.0  # seconds a spare imports least favoured before the normal weight
BOOT = """\
import sys, threading
_got = []
def _least_favoured(yes):
    import os
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write("19" if yes else "0")
    except OSError:
        if yes:  # no autogroups: the thread's nice value (it cannot be lowered back)
            try:
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
            except (AttributeError, OSError):
                pass
def _imported(name):
    # What the import writes to fds 1 and 2 (TensorFlow's notices) is what a fresh
    # replica prints as it imports: kept for every forked one (forked.Fresh), and
    # copied to the spare's log.
    import os
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
def _warm_up():
    import json, os
    _least_favoured(True)
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
_t = threading.Thread(target=_warm_up, name="ddl-warm-up")
_t.start()
_t.join(float(sys.argv[4]))
_least_favoured(False)  # done or not: the spare forks supervisors at the normal weight
_t.join()
if not _got or isinstance(_got[0], BaseException):
    print(f"jupyter-ddl: the warm interpreter could not start: {_got[0]!r}", file=sys.stderr)
    sys.exit(1)
from jupyter_ddl.backends.local import spare
sys.exit(spare.main(_got[0], sys.argv[2], float(sys.argv[3])))
"""
