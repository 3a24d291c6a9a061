"""What each local replica uses: CPU and memory of its process tree (psutil), and the
utilisation and memory of its GPUs (``gpu_usage``), for the watch's RESOURCE events
and for ``LocalBackend.get`` (so ``%ddl status`` and the REST replica JSON show them)."""

from __future__ import annotations

import os
import time

import psutil

from jupyter_ddl.backends.local import gpu_usage
from jupyter_ddl.models import ReplicaStatus

#: seconds a GPU reading is reused: nvidia-smi takes a while, and GPUs change slowly
GPU_EVERY = 2.0


class UsageSampler:
    """Keeps the processes it saw, so CPU percentages cover the time since the last
    sample (the first one: since the process started)."""

    def __init__(self, gpu_every: float = GPU_EVERY) -> None:
        self._procs: dict[int, psutil.Process] = {}
        self._gpu: tuple[float, gpu_usage.Snapshot | None] = (-1e9, None)
        self.gpu_every = gpu_every

    def sample(self, replicas: list[ReplicaStatus]) -> dict[str, dict[str, float]]:
        out = {}
        gpus = self._gpus() if any(r.pid for r in replicas) else None
        # one listing of the machine's processes for every replica: psutil's
        # children() lists them all on each call, and once per replica per `get` was
        # the notebook's main cost while a job trains (docs/performance.md)
        below = children_by_parent() if any(r.pid for r in replicas) else {}
        seen: set[int] = set()
        for r in replicas:
            if not r.pid:
                continue
            pids = [r.pid, *descendants(below, r.pid)]
            cpu = rss = 0.0
            read = 0
            for pid in pids:
                try:
                    cpu += self._cpu(pid)
                    proc = self._procs[pid]
                    # an ended process not yet reaped reads as 0 bytes: no reading
                    if proc.status() == psutil.STATUS_ZOMBIE:
                        continue
                    rss += proc.memory_info().rss
                    read += 1
                except psutil.Error:
                    continue  # ended between the listing and the reading
            seen.update(pids)
            if not read:  # every process had ended: "memory 0 B" would be no measurement
                continue
            values = {"cpu_percent": cpu, "memory_mb": rss / 2**20}
            if gpus is not None:
                values |= gpu_usage.replica_usage(gpus, pids, _visible(self._procs.get(r.pid)))
            out[r.id] = values
        for pid in set(self._procs) - seen:
            del self._procs[pid]
        return out

    def _cpu(self, pid: int) -> float:
        """CPU percent since the last sample; for a process seen the first time, its
        average since it started (psutil's first reading is always 0)."""
        proc = self._procs.get(pid)
        if proc is not None:
            return proc.cpu_percent(None)
        proc = self._procs[pid] = psutil.Process(pid)
        proc.cpu_percent(None)  # starts the interval the next sample reads
        t = proc.cpu_times()
        return 100.0 * (t.user + t.system) / max(time.time() - proc.create_time(), 1e-3)

    def _gpus(self) -> gpu_usage.Snapshot | None:
        when, snap = self._gpu
        if time.monotonic() - when >= self.gpu_every:
            snap = gpu_usage.read_snapshot()
            self._gpu = (time.monotonic(), snap)
        return snap


def children_by_parent() -> dict[int, list[int]]:
    """Each live process's children, from one listing: ``/proc/<pid>/stat`` on Linux
    (what psutil's ``children`` reads, without a Process object per entry), psutil's
    portable listing elsewhere."""
    if not os.path.isdir("/proc/self"):
        parents = {p.pid: p.info["ppid"] for p in psutil.process_iter(["ppid"])}
    else:
        parents = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    raw = f.read()
                # the name (field 2) may hold spaces and ")": fields count from its end
                parents[int(name)] = int(raw[raw.rindex(b")") + 2 :].split(b" ", 2)[1])
            except (OSError, ValueError, IndexError):
                continue  # ended meanwhile, or not a process's
    out: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        if ppid and ppid != pid:
            out.setdefault(ppid, []).append(pid)
    return out


def descendants(children: dict[int, list[int]], pid: int) -> list[int]:
    """Every process below ``pid`` in a ``children_by_parent`` listing."""
    out: list[int] = []
    todo, seen = [pid], {pid}
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in seen:  # a listing read while processes come and go
                seen.add(child)
                out.append(child)
                todo.append(child)
    return out


def _visible(proc: psutil.Process | None) -> str | None:
    if proc is None:  # the replica's own process ended: its children may still run
        return None
    try:
        return proc.environ().get("CUDA_VISIBLE_DEVICES")
    except psutil.Error:
        return None
