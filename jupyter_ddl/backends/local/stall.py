"""Noticing a job that makes no progress, and saying which replica is where.

A distributed job whose peer hangs does not fail: every replica waits for it, prints
nothing and uses no CPU, and the job shows Running forever. The supervisor samples
the CPU time of every process below it and the time of each replica's last line;
when neither moved for ``after`` seconds, the job's status message says so, naming
the replicas that finished the cell (the runtime says when) and how long each other
one has been silent. The message goes away as soon as anything moves again.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import psutil

#: CPU time (share of one core over a sampling period) below which a job is idle;
#: blocked collectives and sleeping interpreters stay far below it
BUSY_SHARE = 0.05
PREFIX = "stalled: "


@dataclass(frozen=True)
class Quiet:
    """One running replica as the stall note sees it."""

    rid: str
    last_output: float  # its last line, or its start
    finished_at: float | None  # when the runtime said the cell finished


def stall_message(replicas: Iterable[Quiet], now: float, since: float, after: float) -> str | None:
    """``stalled: master-0 finished at 12:01:03, worker-0 silent for 60 s`` when nothing
    moved (no line, no CPU: ``since`` is the last CPU activity) for ``after`` seconds;
    None otherwise (and always when ``after`` is 0: the note is off)."""
    quiet = list(replicas)
    if after <= 0 or not quiet:
        return None
    last = max([since, *(q.last_output for q in quiet)])
    if now - last < after:
        return None
    parts = []
    for q in quiet:
        if q.finished_at is not None:
            clock = time.strftime("%H:%M:%S", time.localtime(q.finished_at))
            parts.append(f"{q.rid} finished at {clock}")
        else:
            parts.append(f"{q.rid} silent for {now - q.last_output:.0f} s")
    return PREFIX + ", ".join(parts)


class CpuActivity:
    """When the processes of a job last used CPU, from successive samples."""

    def __init__(self, now: float) -> None:
        self.last_busy = now
        self._seen: dict[tuple[int, float], float] = {}  # (pid, start) -> CPU seconds
        self._at = now

    def sample(self, procs: Iterable[psutil.Process], now: float) -> None:
        seen: dict[tuple[int, float], float] = {}
        used = 0.0
        for p in procs:
            try:
                key = (p.pid, p.create_time())
                cpu = sum(p.cpu_times()[:2])
            except psutil.Error:
                continue
            seen[key] = cpu
            used += cpu - self._seen.get(key, 0.0)  # a new process counts from zero
        if used > BUSY_SHARE * max(now - self._at, 1e-3):
            self.last_busy = now
        self._seen, self._at = seen, now
