"""Which threads wait for a free core: the supervisor's output pump runs as a batch
thread (its wake-ups never preempt a training rank), while every replica and the
thread that starts them keep the normal policy."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from jupyter_ddl.backends.local.pump import OutputPump, background_thread
from jupyter_ddl.models import JobState
from tests.local.conftest import lines, submit, wait
from tests.support import require

pytestmark = pytest.mark.skipif(
    not hasattr(os, "SCHED_BATCH"), reason="scheduling policies are a Linux feature"
)

POLICY = """
import os
ppid = os.getppid()
batch = [t for t in os.listdir(f"/proc/{ppid}/task")
         if os.sched_getscheduler(int(t)) == os.SCHED_BATCH]
print(f"POLICY mine={os.sched_getscheduler(0)} batch_threads_above={len(batch)}", flush=True)
"""


def test_the_pump_thread_is_batch_and_what_starts_processes_is_not():
    before = os.sched_getscheduler(0)
    pump = OutputPump(lambda: None)
    try:
        tid = pump._thread.native_id
        assert tid is not None
        assert os.sched_getscheduler(tid) == os.SCHED_BATCH
        assert os.sched_getscheduler(0) == before == os.SCHED_OTHER  # this thread unchanged
        # a process started from here, as the supervisor starts replicas, is normal
        out = subprocess.run(
            [sys.executable, "-c", "import os; print(os.sched_getscheduler(0))"],
            capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
        assert out.stdout.strip() == str(os.SCHED_OTHER)
    finally:
        pump.close()


def test_background_thread_touches_only_the_calling_thread():
    got: list[tuple[bool, int]] = []

    def run() -> None:
        got.append((background_thread(), os.sched_getscheduler(0)))

    t = threading.Thread(target=run)
    t.start()
    t.join(10)
    assert got == [(True, os.SCHED_BATCH)]
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


def test_replicas_run_normal_beside_a_batch_pump(backend):
    # cold or forked from the warm interpreter (the suite runs both): the same
    require.module("torch")
    name = submit(backend, POLICY, "torch-ddp", {"Master": 1, "Worker": 1}, dist_backend="gloo")
    status = wait(backend, name)
    assert status.state == JobState.SUCCEEDED, status.message
    for replica in ("master-0", "worker-0"):
        said = [t for t in lines(backend, name, replica) if t.startswith("POLICY")]
        assert said == [f"POLICY mine={os.SCHED_OTHER} batch_threads_above=1"], (replica, said)
