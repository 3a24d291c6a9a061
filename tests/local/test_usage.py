"""A local replica's usage sample is a reading of live processes: one whose process
has ended (not yet reaped: a zombie reads as 0 bytes) has none, never "memory 0 B"."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from jupyter_ddl.backends.local.usage import UsageSampler
from jupyter_ddl.core.states import ReplicaState, ReplicaStatus


def _replica(index: int, pid: int) -> ReplicaStatus:
    return ReplicaStatus("Worker", index, ReplicaState.RUNNING, pid=pid)


def test_an_ended_replica_has_no_sample_and_a_live_one_has_its_memory():
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        deadline = time.monotonic() + 10
        while psutil.Process(ended.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline, "the child did not end"
            time.sleep(0.05)
        used = UsageSampler(gpu_every=1e9).sample([_replica(0, ended.pid), _replica(1, live.pid)])
        assert "worker-0" not in used, used
        assert used["worker-1"]["memory_mb"] > 1, used
    finally:
        live.kill()
        live.wait()
        ended.wait()
