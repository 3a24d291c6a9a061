"""GPU figures from nvidia-smi's CSV and NVML, matched to a replica's processes (pure)."""

from __future__ import annotations

from jupyter_ddl.backends.local import gpu_usage
from jupyter_ddl.backends.local.gpu_usage import (
    Gpu,
    GpuProcess,
    Snapshot,
    parse_apps,
    parse_gpus,
    replica_usage,
)
from jupyter_ddl.present.state import format_resources

# what `nvidia-smi --query-gpu=index,uuid,utilization.gpu,memory.used
# --format=csv,noheader,nounits` prints on a two-GPU machine (one MIG-less H100 idle)
GPUS = """0, GPU-5b3e2a10-aaaa-bbbb-cccc-000000000000, 93, 10452
1, GPU-77d1c0ee-aaaa-bbbb-cccc-111111111111, [N/A], 3
"""
APPS = """4242, GPU-5b3e2a10-aaaa-bbbb-cccc-000000000000, 10440
4243, GPU-5b3e2a10-aaaa-bbbb-cccc-000000000000, [N/A]
"""


def test_parsing_keeps_what_is_there_and_skips_what_is_not():
    gpus = parse_gpus(GPUS + "garbage line\n")
    assert gpus[0] == Gpu("0", "GPU-5b3e2a10-aaaa-bbbb-cccc-000000000000", 93.0, 10452.0)
    assert gpus[1].util_percent is None and gpus[1].memory_used_mb == 3.0
    apps = parse_apps(APPS + "0\n")  # an index-only line (a smaller fake) is no process
    assert [(a.pid, a.used_mb) for a in apps] == [(4242, 10440.0), (4243, None)]
    assert parse_gpus("0\n1\n") == [Gpu("0"), Gpu("1")]


def test_a_replica_gets_the_gpus_its_processes_run_on():
    snap = Snapshot(parse_gpus(GPUS), parse_apps(APPS))
    got = replica_usage(snap, [4242, 4243, 99], visible="1")  # its pids win over the env
    assert got == {"gpu_count": 1.0, "gpu_util_percent": 93.0, "gpu_memory_mb": 10440.0}


def test_without_its_pids_the_visible_devices_say_which_gpus():
    """A container with its own pid namespace: the driver lists pids we do not know."""
    snap = Snapshot(parse_gpus(GPUS), parse_apps(APPS))
    assert replica_usage(snap, [7], visible="0") == {
        "gpu_count": 1.0, "gpu_util_percent": 93.0, "gpu_memory_mb": 10452.0,
    }  # fmt: skip
    by_uuid = replica_usage(snap, [7], visible="GPU-77d1c0ee-aaaa-bbbb-cccc-111111111111")
    assert by_uuid == {"gpu_count": 1.0, "gpu_memory_mb": 3.0}  # no utilisation reported
    assert replica_usage(snap, [7], visible="") == {}  # asked for no GPU
    assert replica_usage(snap, [7], visible=None) == {}


def test_the_figures_read_as_a_person_would_say_them():
    text = format_resources(
        {"gpu_memory_mb": 10440.0, "cpu_percent": 57.2, "gpu_util_percent": 93.0,
         "memory_mb": 1228.8, "gpu_count": 1.0}
    )  # fmt: skip
    assert text == "CPU 57%, memory 1.2 GiB, GPU 93%, GPU memory 10.2 GiB, GPUs 1"


class _FakeNvml:
    """The calls gpu_usage makes of nvidia-ml-py's pynvml, answering like one GPU."""

    class _Mem:
        used, total = 2 * 2**30, 80 * 2**30

    class _Util:
        gpu = 41

    class _Proc:
        pid, usedGpuMemory = 4242, 2**30

    def nvmlInit(self):
        pass

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetUUID(self, h):
        return b"GPU-abc"

    def nvmlDeviceGetMemoryInfo(self, h):
        return self._Mem()

    def nvmlDeviceGetUtilizationRates(self, h):
        return self._Util()

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [self._Proc()]


def test_nvml_is_read_when_it_is_there(monkeypatch):
    monkeypatch.setattr(gpu_usage, "_nvml", _FakeNvml())
    snap = gpu_usage.read_snapshot()
    assert snap == Snapshot(
        [Gpu("0", "GPU-abc", 41.0, 2048.0)], [GpuProcess(4242, "GPU-abc", 1024.0)]
    )
    assert replica_usage(snap, [4242], None)["gpu_memory_mb"] == 1024.0


def test_no_driver_no_figures(monkeypatch, tmp_path):
    monkeypatch.setattr(gpu_usage, "_nvml", False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi
    assert gpu_usage.read_snapshot() is None
