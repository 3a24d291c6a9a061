"""GPU utilisation and memory of a replica's processes.

Where the numbers come from: NVML through ``nvidia-ml-py`` (module ``pynvml``) when it
imports and initialises, else ``nvidia-smi --query-gpu`` and ``--query-compute-apps``,
else nowhere (no GPU, no driver: no GPU figures at all). A replica's GPUs are those
running one of its processes; when the driver cannot see our pids (a container with
its own pid namespace) they are the ones its ``CUDA_VISIBLE_DEVICES`` names. Parsing
and matching are pure functions; ``read_snapshot`` is the only I/O.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

GPU_QUERY = "index,uuid,utilization.gpu,memory.used"
APPS_QUERY = "pid,gpu_uuid,used_memory"
MIB = 2**20


@dataclass(frozen=True)
class Gpu:
    index: str
    uuid: str | None = None
    util_percent: float | None = None
    memory_used_mb: float | None = None


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    gpu_uuid: str
    used_mb: float | None = None


@dataclass(frozen=True)
class Snapshot:
    """Every GPU of the machine and every process using one, at one moment."""

    gpus: list[Gpu] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)


def _number(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


def parse_gpus(csv_text: str) -> list[Gpu]:
    """``nvidia-smi --query-gpu=GPU_QUERY --format=csv,noheader,nounits`` output."""
    out = []
    for line in csv_text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if not cells or not cells[0].isdigit():
            continue
        cells += [""] * (4 - len(cells))
        out.append(Gpu(cells[0], cells[1] or None, _number(cells[2]), _number(cells[3])))
    return out


def parse_apps(csv_text: str) -> list[GpuProcess]:
    """``nvidia-smi --query-compute-apps=APPS_QUERY --format=csv,noheader,nounits``."""
    out = []
    for line in csv_text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 2 or not cells[0].isdigit() or not cells[1]:
            continue
        out.append(
            GpuProcess(int(cells[0]), cells[1], _number(cells[2]) if len(cells) > 2 else None)
        )
    return out


def visible_gpus(visible: str | None, gpus: list[Gpu]) -> list[Gpu]:
    """The GPUs a ``CUDA_VISIBLE_DEVICES`` value names (indices or UUIDs); none for
    None (unknown), "" or "-1"."""
    if not visible:
        return []
    named = [v.strip() for v in visible.split(",") if v.strip()]
    return [g for g in gpus if g.index in named or (g.uuid and g.uuid in named)]


def replica_usage(snapshot: Snapshot, pids: Iterable[int], visible: str | None) -> dict[str, float]:
    """``gpu_util_percent`` (mean over its GPUs), ``gpu_memory_mb`` (its processes', or
    its GPUs' when the driver cannot see its pids) and ``gpu_count``; {} without GPUs."""
    mine = set(pids)
    procs = [p for p in snapshot.processes if p.pid in mine]
    by_uuid = {g.uuid: g for g in snapshot.gpus if g.uuid}
    used = [by_uuid[u] for u in dict.fromkeys(p.gpu_uuid for p in procs) if u in by_uuid]
    if not used:
        used = visible_gpus(visible, snapshot.gpus)
    if not used:
        return {}
    out: dict[str, float] = {"gpu_count": float(len(used))}
    utils = [g.util_percent for g in used if g.util_percent is not None]
    if utils:
        out["gpu_util_percent"] = sum(utils) / len(utils)
    own = [p.used_mb for p in procs if p.used_mb is not None]
    whole = [g.memory_used_mb for g in used if g.memory_used_mb is not None]
    if own:
        out["gpu_memory_mb"] = sum(own)
    elif whole:
        out["gpu_memory_mb"] = sum(whole)
    return out


# -- reading (I/O) --------------------------------------------------------------------------
_nvml: Any = None  # the pynvml module once initialised; False when it cannot be


def _from_nvml() -> Snapshot | None:
    global _nvml
    if _nvml is False:
        return None
    try:
        if _nvml is None:
            import pynvml

            pynvml.nvmlInit()
            _nvml = pynvml
        nv = _nvml
        gpus, procs = [], []
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            uuid = nv.nvmlDeviceGetUUID(h)
            uuid = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
            mem = nv.nvmlDeviceGetMemoryInfo(h)
            util = nv.nvmlDeviceGetUtilizationRates(h).gpu
            gpus.append(Gpu(str(i), uuid, float(util), mem.used / MIB))
            for p in nv.nvmlDeviceGetComputeRunningProcesses(h):
                used = getattr(p, "usedGpuMemory", None)
                procs.append(GpuProcess(int(p.pid), uuid, used / MIB if used else None))
        return Snapshot(gpus, procs)
    except Exception:  # noqa: BLE001 - not installed, no driver, no GPU: try nvidia-smi
        _nvml = False
        return None


def _smi(tool: str, query: str) -> str:
    return subprocess.run(
        [tool, query, "--format=csv,noheader,nounits"],
        capture_output=True, text=True, timeout=10, check=True,
    ).stdout  # fmt: skip


def _from_smi() -> Snapshot | None:
    tool = shutil.which("nvidia-smi")
    if not tool:
        return None
    try:
        gpus = parse_gpus(_smi(tool, f"--query-gpu={GPU_QUERY}"))
    except (OSError, subprocess.SubprocessError):
        return None
    if not gpus:
        return None
    try:
        apps = parse_apps(_smi(tool, f"--query-compute-apps={APPS_QUERY}"))
    except (OSError, subprocess.SubprocessError):
        apps = []  # the GPUs' own figures still tell something
    return Snapshot(gpus, apps)


def read_snapshot() -> Snapshot | None:
    """The machine's GPUs and their processes now; None when there are none to read."""
    return _from_nvml() or _from_smi()
