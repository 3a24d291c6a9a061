"""The supervisor's view of every process below it (see ``ownership``).

Each scan records the processes (``processes.json``: what a cancel after the
supervisor's death stops), collects orphans handed to the supervisor that ended, and
samples their CPU time for the stall note (``stall``). At the job's end ``stop_all``
stops all of them at once.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable

import psutil

from jupyter_ddl.backends.local import ownership
from jupyter_ddl.backends.local.jobdir import JobDir
from jupyter_ddl.backends.local.stall import PREFIX as STALL_PREFIX
from jupyter_ddl.backends.local.stall import CpuActivity, Quiet, stall_message

#: seconds between SIGTERM and SIGKILL when the job's processes are stopped
STOP_GRACE = 2.0


class JobProcesses:
    def __init__(self, jd: JobDir, stall_after: float) -> None:
        self.jd = jd
        self.stall_after = stall_after
        self.cpu = CpuActivity(time.time())
        self._records: dict[int, float] = {}  # pid -> start time

    def record(self, pids: Iterable[int]) -> None:
        """Add these processes to ``processes.json`` (written only when it changes)."""
        procs = []
        for pid in pids:
            try:
                procs.append(psutil.Process(pid))
            except psutil.Error:
                continue
        self.record_procs(procs)

    def record_procs(self, procs: Iterable[psutil.Process]) -> None:
        """``record`` for processes in hand: their start times are read already."""
        changed = False
        for p in procs:
            pid = p.pid
            try:
                started = p.create_time()
            except psutil.Error:
                continue
            if self._records.get(pid) != started:
                self._records[pid] = started
                changed = True
        if changed:
            self.jd.write_processes(sorted(self._records.items()))

    def restart_clock(self, now: float) -> None:
        """The replicas (re)started now: no stall is counted from before."""
        self.cpu = CpuActivity(now)

    def scan(self, quiet: list[Quiet], keep: set[int], now: float) -> str | None:
        """Record, reap and sample; returns the stall note for ``quiet`` (the running
        replicas), None while the job moves. ``keep``: pids a Popen waits for."""
        # one listing of the processes below serves all three (each listing reads
        # every process on the machine: this runs beside the training it watches)
        procs = ownership.descendants()
        self.record_procs(procs)
        ownership.reap_orphans(keep, ownership.own_children(procs))
        self.cpu.sample(procs, now)
        return stall_message(quiet, now, self.cpu.last_busy, self.stall_after)

    def stop_all(self, keep: set[int]) -> None:
        """Every process below the supervisor (replicas, what they started, orphans
        handed to it), then any other one carrying the job's marker: SIGTERM, one
        grace period for all, SIGKILL."""
        procs = ownership.descendants()
        self.record_procs(procs)
        left = ownership.stop(procs, STOP_GRACE)
        left += ownership.stop(ownership.marked(self.jd.root), STOP_GRACE)
        ownership.reap_orphans(keep)
        for p in left:
            print(f"jupyter-ddl: process {p.pid} did not stop", file=sys.stderr, flush=True)


def updated_message(current: str | None, note: str | None) -> str | None:
    """The job's message with the stall note put in or taken out; a message of
    another kind (requirements, backoff) is never replaced by it."""
    if current is None or current.startswith(STALL_PREFIX):
        return note
    return current
