"""A running local job's resources show its GPUs' utilisation and memory, read from a
fake ``nvidia-smi`` on PATH (the process boundary): in the backend's status (what
``%ddl status`` and the REST replica JSON show) and in the watch's RESOURCE events."""

from __future__ import annotations

import os
import stat
import threading
import time

import pytest

from jupyter_ddl.backends.local import LocalBackend
from jupyter_ddl.models import EventKind, Resources
from tests.local.conftest import submit, wait_line
from tests.support import require

pytestmark = pytest.mark.slow

SMI = """#!/bin/sh
case "$*" in
  *--query-gpu=index,uuid*)
    echo "0, GPU-aaaa, 87, 20480, 81559"
    echo "1, GPU-bbbb, 12, 512, 81559" ;;
  *--query-compute-apps*)
    cat "$DDL_FAKE_APPS" 2>/dev/null ;;
  *)
    echo 0; echo 1 ;;
esac
"""

CELL = """
import time
print("up", flush=True)
time.sleep(30)
"""


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    tool = tmp_path / "bin" / "nvidia-smi"
    tool.parent.mkdir()
    tool.write_text(SMI)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    apps = tmp_path / "apps.csv"
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DDL_FAKE_APPS", str(apps))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return apps


def test_resources_show_each_replicas_gpu(backend, fake_smi):
    require.module("torch")
    from jupyter_ddl.notebook.commands import status_text
    from jupyter_ddl.server.answers import job_detail

    name = submit(
        backend, CELL, "torch-ddp", {"Master": 1, "Worker": 1}, dist_backend="gloo",
        default_resources=Resources(gpu=1),
    )  # fmt: skip
    for rid in ("master-0", "worker-0"):
        wait_line(backend, name, rid, "up")
    master = next(r for r in backend.get(name).replicas if r.id == "master-0")
    fake_smi.write_text(f"{master.pid}, GPU-aaaa, 2048\n")  # the driver sees master's pid
    status = LocalBackend().get(name)  # another surface (the server) asks: a fresh reading
    got = {r.id: r.resources for r in status.replicas}
    assert got["master-0"]["gpu_util_percent"] == 87.0
    assert got["master-0"]["gpu_memory_mb"] == 2048.0  # its own process's memory
    assert got["worker-0"]["gpu_util_percent"] == 12.0  # by CUDA_VISIBLE_DEVICES=1
    assert got["worker-0"]["gpu_memory_mb"] == 512.0
    assert {"cpu_percent", "memory_mb"} <= set(got["master-0"])

    text = status_text(status)
    assert "GPU 87%, GPU memory 2.0 GiB" in text and "GPU 12%, GPU memory 512.0 MiB" in text
    assert "master-0 · rank 0" in text and "worker-0 · rank 1" in text
    detail = job_detail(status, None, None)
    rest = {r["id"]: r for r in detail["replicas"]}
    assert (
        rest["worker-0"]["rank"] == 1 and rest["worker-0"]["resources"]["gpu_util_percent"] == 12.0
    )

    stop = threading.Event()
    deadline = time.monotonic() + 30
    for event in backend.watch(name, stop=stop):
        if event.kind == EventKind.RESOURCE and "gpu_util_percent" in (event.metrics or {}):
            assert event.replica in ("master-0", "worker-0")
            break
        assert time.monotonic() < deadline, "no RESOURCE event with the GPU"
    stop.set()
    backend.cancel(name)
