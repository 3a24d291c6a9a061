"""A local replica's usage sample is a reading of live processes: one whose process
has ended (not yet reaped: a zombie reads as 0 bytes) has none, never "memory 0 B"."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from jupyter_ddl.backends.local import usage
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


def test_a_replica_counts_every_process_below_it_from_one_listing():
    # a replica that started a worker which started one more: all three are its own
    tree = (
        "import subprocess, sys, time\n"
        "inner = 'import subprocess, sys, time; "
        'p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]); '
        "time.sleep(60)'\n"
        "subprocess.Popen([sys.executable, '-c', inner])\n"
        "time.sleep(60)\n"
    )
    root = subprocess.Popen([sys.executable, "-c", tree])
    try:
        deadline = time.monotonic() + 30
        while len(psutil.Process(root.pid).children(recursive=True)) < 2:
            assert time.monotonic() < deadline, "the tree did not start"
            time.sleep(0.05)
        below = usage.descendants(usage.children_by_parent(), root.pid)
        assert sorted(below) == sorted(
            c.pid for c in psutil.Process(root.pid).children(recursive=True)
        )
        used = UsageSampler(gpu_every=1e9).sample([_replica(0, root.pid)])
        # three interpreters: more memory than the root alone holds
        alone = psutil.Process(root.pid).memory_info().rss / 2**20
        assert used["worker-0"]["memory_mb"] > 2 * alone, (used, alone)
    finally:
        for p in psutil.Process(root.pid).children(recursive=True):
            p.kill()
        root.kill()
        root.wait()


def test_descendants_walks_a_listing_read_while_processes_come_and_go():
    # a listing taken mid-change can hold a loop (a pid reused as its own ancestor)
    children = {1: [2, 3], 2: [4], 4: [2], 3: []}
    assert sorted(usage.descendants(children, 1)) == [2, 3, 4]
    assert usage.descendants(children, 9) == []
