"""The CPU the product's own processes take while a local job trains, read from the
kernel's per-process accounting (``/proc/<pid>/stat``).

The steps/s ratio (``training_overhead``) is what the issue's target names, but on a
shared 2-core machine a single pair of runs spreads ±7–20 %, far wider than the 1–3 %
in question. CPU accounting does not spread like that: whatever the machine's other
load, the supervisor's log pump costs the CPU seconds it costs. It bounds the ratio: a
DDP job moves at its slowest rank's pace, so each CPU second a helper takes can delay
the job by a second at most, and the job keeps at least ``1 - helper CPU / training
seconds`` of its speed. The helpers counted are the job's supervisor (its log pump,
exit watch and resource sampling), every spare in the warm directory (the one beside
a first job is waiting to import), and the notebook side (this process: the job
manager's wait), less the sampler's own thread.
"""

from __future__ import annotations

import json
import os
import threading
import time
from bisect import bisect_left
from pathlib import Path

from jupyter_ddl.backends.local.pump import background_thread

__all__ = ["KINDS", "Sampler", "cpu_seconds", "held_speed", "interpolate"]

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(stat_path: str) -> float | None:
    """utime + stime of one process or thread, or None when it is gone."""
    try:
        with open(stat_path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    # the name (field 2) may hold spaces and parentheses: fields count from its end
    fields = raw[raw.rindex(b")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def interpolate(samples: list[tuple[float, float]], t: float) -> float:
    """The value at time ``t`` from (time, value) samples, linearly between the two
    around it; clamped to the first or last sample outside them."""
    times = [s[0] for s in samples]
    i = bisect_left(times, t)
    if i == 0:
        return samples[0][1]
    if i == len(samples):
        return samples[-1][1]
    (t0, v0), (t1, v1) = samples[i - 1], samples[i]
    return v0 if t1 == t0 else v0 + (v1 - v0) * (t - t0) / (t1 - t0)


def held_speed(helper_cpu: float, window: float) -> float:
    """The least share of its speed a lockstep job keeps when helpers took
    ``helper_cpu`` CPU seconds during its ``window`` seconds of training."""
    if window <= 0:
        raise ValueError("the training window must be longer than 0 s")
    return max(0.0, 1.0 - helper_cpu / window)


KINDS = ("supervisor", "spares", "notebook")


class Sampler:
    """Samples, every ``period`` seconds on a thread of its own and once more as it
    stops, the CPU seconds of each kind of helper (``KINDS``), each process or thread
    counted from when it was first seen (so one that starts or ends meanwhile adds only
    what it used while seen); which processes those are is looked up every
    ``refresh`` seconds."""

    def __init__(
        self, job_dir: Path, warm_dir: Path, period: float = 0.25, refresh: float = 1.0
    ) -> None:
        self.job_dir, self.warm_dir, self.period = job_dir, warm_dir, period
        self.refresh = refresh  # how often the processes to read are looked up again
        self.samples: list[tuple[float, dict[str, float]]] = []
        self._paths_at = -refresh
        self._cached: list[tuple[str, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="helper-cpu")
        self._first: dict[str, float] = {}  # stat path -> its CPU seconds when first seen
        self._last: dict[str, float] = {}
        self._kind: dict[str, str] = {}

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()  # the last sample is taken after whatever was timed ended

    def helper_cpu(self, start: float, end: float) -> dict[str, float]:
        """Each kind's CPU seconds between two wall-clock times (``time.time()``)."""
        if len(self.samples) < 2:
            raise RuntimeError("the sampler took fewer than 2 samples")
        out = {}
        for kind in KINDS:
            series = [(t, used[kind]) for t, used in self.samples]
            out[kind] = interpolate(series, end) - interpolate(series, start)
        return out

    def _paths(self) -> list[tuple[str, str]]:
        me = threading.get_native_id()
        paths = [("notebook", f"/proc/self/task/{tid}/stat")
                 for tid in os.listdir("/proc/self/task") if tid != str(me)]  # fmt: skip
        sup = _read(self.job_dir / "supervisor.json")
        if isinstance(sup, dict) and isinstance(sup.get("pid"), int):
            paths.append(("supervisor", f"/proc/{sup['pid']}/stat"))
        for record in self.warm_dir.glob("*.json") if self.warm_dir.is_dir() else ():
            info = _read(record)
            if isinstance(info, dict) and isinstance(info.get("pid"), int):
                paths.append(("spares", f"/proc/{info['pid']}/stat"))
        return paths

    def _run(self) -> None:
        # The sampler disturbs what it measures as little as it can: it reads a few
        # files 4 times a second (20 times a second, with the supervisor's record and
        # the spares' parsed each time, cost the product's runs ~1 % that the by-hand
        # runs, with fewer processes to read, did not pay), and as a batch thread its
        # wake-ups wait for a free core instead of preempting a rank.
        background_thread()
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.period)

    def _sample(self) -> None:
        mono = time.monotonic()
        if mono - self._paths_at >= self.refresh:
            self._cached, self._paths_at = self._paths(), mono
        for kind, path in self._cached:
            now = cpu_seconds(path)
            if now is None:
                continue  # gone: what it used while seen stays in _last
            self._first.setdefault(path, now)
            self._kind.setdefault(path, kind)
            self._last[path] = now
        used = dict.fromkeys(KINDS, 0.0)
        for path, last in self._last.items():
            used[self._kind[path]] += last - self._first[path]
        self.samples.append((time.time(), used))


def _read(path: Path) -> object:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
