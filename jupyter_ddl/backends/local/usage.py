"""What each local replica uses: CPU and memory of its process tree (psutil), and the
utilisation and memory of its GPUs (``gpu_usage``), for the watch's RESOURCE events
and for ``LocalBackend.get`` (so ``%ddl status`` and the REST replica JSON show them)."""

from __future__ import annotations

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
        seen: set[int] = set()
        for r in replicas:
            if not r.pid:
                continue
            try:
                root = self._procs.get(r.pid) or psutil.Process(r.pid)
                pids = [r.pid, *(c.pid for c in root.children(recursive=True))]
            except psutil.Error:
                continue
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
                values |= gpu_usage.replica_usage(gpus, pids, _visible(root))
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


def _visible(proc: psutil.Process) -> str | None:
    try:
        return proc.environ().get("CUDA_VISIBLE_DEVICES")
    except psutil.Error:
        return None
