"""The supervisor's housekeeping lists the processes below it once per scan and reads
its own children, and the orphans to collect, from that one listing."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from jupyter_ddl.backends.local import ownership

PARENT = (
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "time.sleep(60)\n"
)


def test_own_children_are_the_direct_ones_of_the_listing():
    parent = subprocess.Popen([sys.executable, "-c", PARENT])
    try:
        deadline = time.monotonic() + 30
        while not psutil.Process(parent.pid).children():
            assert time.monotonic() < deadline, "the grandchild did not start"
            time.sleep(0.05)
        below = ownership.descendants()
        grandchild = psutil.Process(parent.pid).children()[0].pid
        assert {parent.pid, grandchild} <= {p.pid for p in below}
        own = {p.pid for p in ownership.own_children(below)}
        assert parent.pid in own and grandchild not in own
    finally:
        for p in psutil.Process(parent.pid).children(recursive=True):
            p.kill()
        parent.kill()
        parent.wait()


def test_an_ended_child_in_the_listing_is_collected_unless_kept():
    kept = subprocess.Popen([sys.executable, "-c", "pass"])
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    for p in (kept, ended):
        while psutil.Process(p.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline, "the child did not end"
            time.sleep(0.05)
    children = ownership.own_children(ownership.descendants())
    # ≥: an earlier test in this process may have left an ended child of its own
    assert ownership.reap_orphans({kept.pid}, children) >= 1
    assert not psutil.pid_exists(ended.pid) or (
        psutil.Process(ended.pid).status() != psutil.STATUS_ZOMBIE
    )
    assert psutil.Process(kept.pid).status() == psutil.STATUS_ZOMBIE  # its Popen waits
    assert kept.wait(10) == 0
    ended.wait(10)  # already collected: Popen reads that as ended
