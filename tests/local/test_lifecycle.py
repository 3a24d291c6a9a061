"""Restarts, failures, cancel, deadlines and life beyond the submitting process.

Most jobs here use TF strategy names with cells that import no framework: the shim
then starts in a fraction of a second, which keeps these tests cheap. The restart
test uses real DDP, where a killed peer really breaks the others' collectives.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from jupyter_ddl.backends.local import LocalBackend
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.errors import ResourceError
from jupyter_ddl.models import EventKind, JobSpec, JobState, ReplicaState, Resources, RestartPolicy
from tests.local.conftest import job_processes, lines, submit, wait, wait_line
from tests.support import require

ROOT = Path(__file__).resolve().parents[2]

DDP_STEPS = """
import time, torch, torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(25):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    print(f"step {step}", flush=True)
    time.sleep(0.1)
print("TRAINED", flush=True)
"""

STEPS = """
import time
for step in range(20):
    print(f"step {step}", flush=True)
    time.sleep(0.2)
print("TRAINED", flush=True)
"""


def kill(backend, name: str, replica: str) -> int:
    pid = next(r.pid for r in backend.get(name).replicas if r.id == replica)
    assert pid
    os.kill(pid, signal.SIGKILL)
    return pid


@pytest.mark.slow
def test_killed_replica_restarts_on_failure_and_job_succeeds(backend):
    require.module("torch")
    name = submit(backend, DDP_STEPS, "torch-ddp", {"Master": 1, "Worker": 1})  # OnFailure
    wait_line(backend, name, "worker-0", "step 3")
    kill(backend, name, "worker-0")
    status = wait(backend, name)
    assert status.state == JobState.SUCCEEDED, status.message
    worker = next(r for r in status.replicas if r.id == "worker-0")
    assert worker.restarts >= 1
    log = lines(backend, name, "worker-0")
    assert any(
        "signal 9 (SIGKILL)" in t and "restart 1 (restartPolicy OnFailure)" in t for t in log
    )
    assert log[-1] == "TRAINED" or "TRAINED" in log


def test_killed_replica_with_never_fails_the_job_naming_it(backend):
    name = submit(backend, STEPS, "tf-multi-worker-mirrored", {"Worker": 2})  # TFJob: Never
    wait_line(backend, name, "worker-1", "step 2")
    kill(backend, name, "worker-1")
    status = wait(backend, name, timeout=60)
    assert status.state == JobState.FAILED
    assert "worker-1" in status.message and "signal 9 (SIGKILL)" in status.message
    assert "step 2" in status.message  # its last lines
    w1 = next(r for r in status.replicas if r.id == "worker-1")
    assert w1.state == ReplicaState.FAILED and w1.signal == 9 and w1.restarts == 0
    assert any(t.startswith("step") for t in w1.last_lines)
    w0 = next(r for r in status.replicas if r.id == "worker-0")
    assert w0.state == ReplicaState.TERMINATED  # stopped when the job failed


def test_backoff_limit_ends_restarts(backend):
    code = "print('trying', flush=True)\nraise SystemExit(3)\n"
    name = submit(
        backend, code, "tf-mirrored", {"Worker": 1},
        restart_policy=RestartPolicy.ON_FAILURE, backoff_limit=2,
    )  # fmt: skip
    status = wait(backend, name, timeout=60)
    assert status.state == JobState.FAILED
    assert "backoff limit" in status.message and "exit code 3" in status.message
    assert status.replicas[0].restarts == 2
    assert lines(backend, name, "worker-0").count("trying") == 3


def test_default_backoff_limit_ends_a_crash_loop(backend):
    # No backoff_limit given: JobSpec's default (3) must stop OnFailure restarts.
    code = "print('step 0', flush=True)\nraise RuntimeError('boom at step 0')\n"
    name = submit(
        backend, code, "tf-mirrored", {"Worker": 1}, restart_policy=RestartPolicy.ON_FAILURE
    )
    status = wait(backend, name, timeout=60)
    assert status.state == JobState.FAILED
    msg = status.message
    assert "backoff limit (3)" in msg and "worker-0" in msg and "exit code 1" in msg, msg
    assert "RuntimeError: boom at step 0" in msg, msg  # its last lines
    assert status.replicas[0].restarts == 3 and status.replicas[0].exit_code == 1
    assert lines(backend, name, "worker-0").count("step 0") == 4


def test_active_deadline_fails_the_job(backend):
    name = submit(
        backend,
        "import time\ntime.sleep(120)\n",
        "tf-mirrored",
        {"Worker": 1},
        active_deadline_seconds=1,
    )
    status = wait(backend, name, timeout=60)
    assert status.state == JobState.FAILED and "deadline" in status.message
    assert status.replicas[0].state == ReplicaState.TERMINATED


TREE = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
print(f"child {child.pid}", flush=True)
time.sleep(300)
"""


def test_cancel_leaves_no_process_and_spares_other_jobs(backend):
    victim = submit(backend, TREE, "tf-multi-worker-mirrored", {"Worker": 2})
    longer = STEPS.replace("range(20)", "range(50)")  # still running after the cancel
    other = submit(backend, longer, "tf-multi-worker-mirrored", {"Worker": 2})
    for rid in ("worker-0", "worker-1"):
        wait_line(backend, victim, rid, "child ")
    victim_dir = backend.job_dir(victim)
    grandchildren = [
        int(t.split()[1])
        for rid in ("worker-0", "worker-1")
        for t in lines(backend, victim, rid)
        if t.startswith("child ")
    ]
    assert len(job_processes(victim_dir)) >= 5  # supervisor, 2 replicas, 2 grandchildren
    status = backend.cancel(victim)
    assert status.state == JobState.CANCELLED
    assert {r.state for r in status.replicas} == {ReplicaState.TERMINATED}
    assert job_processes(victim_dir) == []
    assert not any(
        psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        for p in grandchildren
    )
    assert backend.get(other).state == JobState.RUNNING
    done = wait(backend, other, timeout=90)
    assert done.state == JobState.SUCCEEDED and "TRAINED" in lines(backend, other, "worker-1")


SUBMITTER = """
import sys
sys.path.insert(0, {root!r})
from jupyter_ddl.backends.local import LocalBackend
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.models import JobSpec
code = "import time\\nfor i in range(6):\\n    print(f'tick {{i}}', flush=True)\\n    time.sleep(0.5)\\n"
LocalBackend().submit(JobSpec(name="survivor", strategy="tf-multi-worker-mirrored", replicas={{"Worker": 2}}, notebook="nb.ipynb"), build_bundle(code))
print("submitted")
"""


def test_job_outlives_the_submitting_process_and_reattaches(backend, data_dir):
    script = textwrap.dedent(SUBMITTER.format(root=str(ROOT)))
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=os.environ
    )
    assert out.stdout.strip() == "submitted", out.stderr
    fresh = LocalBackend()  # as a restarted kernel would
    listed = {s.name: s for s in fresh.list(notebook="nb.ipynb")}
    assert "survivor" in listed and not listed["survivor"].state.finished
    events = list(fresh.watch("survivor"))
    assert events[-1].status is not None and events[-1].status.state == JobState.SUCCEEDED
    ticks = [e.log.text for e in events if e.log and e.replica == "worker-0"]
    assert ticks == [f"tick {i}" for i in range(6)]
    samples = [e.metrics for e in events if e.kind == EventKind.RESOURCE and e.metrics]
    assert samples and all(s["memory_mb"] > 1 for s in samples)


def test_more_gpus_than_present_is_refused(backend, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    spec = JobSpec(
        name="greedy",
        strategy="tf-mirrored",
        replicas={"Worker": 1},
        default_resources=Resources(gpu=2),
    )
    with pytest.raises(ResourceError) as e:
        backend.submit(spec, build_bundle("print(1)"))
    assert "2 GPUs" in str(e.value) and "has 0" in str(e.value)
    assert backend.list() == []


def test_follow_logs_until_the_end_and_watch_from_now(backend):
    code = "import time\nfor i in range(8):\n    print(f'line {i}', flush=True)\n    time.sleep(0.25)\n"
    name = submit(backend, code, "tf-mirrored", {"Worker": 1})
    wait_line(backend, name, "worker-0", "line 2")
    later = [e.log.text for e in backend.watch(name, from_start=False) if e.log]
    assert later and "line 0" not in later and later[-1] == "line 7"
    followed = [line.text for line in backend.logs(name, replica="worker-0", offset=5, follow=True)]
    assert followed == ["line 5", "line 6", "line 7"]
