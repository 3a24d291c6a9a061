"""The supervisor process: ``python -m jupyter_ddl.backends.local.supervisor_main JOBDIR
[COLD]`` (``control.start_supervisor``), or a spare that takes a job (``spare``).

Its signal handlers (a cancel from its first instant), its record in
``supervisor.json``, and one job run to its end by ``Supervisor``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import traceback
from pathlib import Path

import psutil

from jupyter_ddl.backends.local import ownership, ports
from jupyter_ddl.backends.local.forked import Fresh
from jupyter_ddl.backends.local.jobdir import JobDir, write_json
from jupyter_ddl.backends.local.supervisor import Supervisor
from jupyter_ddl.errors import DDLError
from jupyter_ddl.models import JobState


def handle_signals() -> tuple[threading.Event, list[threading.Event]]:
    """SIGTERM, SIGINT and SIGHUP set the returned event (a cancel) and wake the
    events added to the returned list."""
    stop = threading.Event()
    wake: list[threading.Event] = []

    def on_signal(signum: int, frame: object) -> None:
        stop.set()
        for event in wake:
            event.set()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    return stop, wake


def announce(jd: JobDir, **extra: object) -> None:
    """``supervisor.json`` of this process, "ready": its signal handlers are in place."""
    me = psutil.Process()
    write_json(jd.supervisor_path, {"pid": me.pid, "create_time": me.create_time(), "ready": True, **extra})  # fmt: skip


def main(root: str, cold: str | None = None) -> int:
    stop, wake = handle_signals()
    umask = os.umask(0o077)  # the job's files are the user's alone
    ownership.become_subreaper()
    jd = JobDir(Path(root))
    # Announced only now: a cancel before this waits for it instead of killing a
    # process that cannot handle SIGTERM yet (the job would end Failed, not Cancelled).
    announce(jd)
    return run_job(jd, stop, wake, umask, cold=cold)


def run_job(
    jd: JobDir,
    stop: threading.Event,
    wake: list[threading.Event],
    umask: int,
    *,
    fresh: Fresh | None = None,
    cold: str | None = None,
) -> int:
    """Supervise the job to its end (``fresh``: this interpreter is warm, replicas
    may be forked from it; ``cold``: why a job with a warm path could not)."""
    try:
        sup = Supervisor(jd, stop, umask, fresh=fresh, cold=cold)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"jupyter-ddl: cannot read the job in {jd.root}: {e!r}", file=sys.stderr)
        return 1  # the backend reports the job as unreadable
    wake.append(sup.wake)
    try:
        if sup.stopping:
            sup.finish(JobState.CANCELLED, "cancelled by the user")
            return 0
        sup.write_status(force=True)
        sup.prepare()
        sup.run()
    except DDLError as e:
        if sup.stopping:  # e.g. pip, stopped by the cancel
            sup.finish(JobState.CANCELLED, "cancelled by the user")
        else:
            sup.finish(JobState.FAILED, str(e))
    except Exception as e:  # noqa: BLE001 - our bug: stop everything, say where to look
        traceback.print_exc()
        sup.finish(JobState.FAILED, f"the local supervisor crashed ({e}); see {jd.supervisor_log}")
    finally:
        ports.release(sup.data_dir, sup.spec.name)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
