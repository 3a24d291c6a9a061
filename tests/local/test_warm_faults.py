"""The local backend's fault cases on the warm path: the supervisor is a spare that took
the job and the replicas are forked from it, and still nothing a job starts outlives it.

The same checks as ``test_faults.py`` (the process table holds nothing of the job, its
state and message say what happened, its lines stay), with torch-ddp jobs handed to a
ready spare. ``DDL_TEST_WARM=1`` runs ``test_faults.py`` itself with a spare ready."""

from __future__ import annotations

import json
import os
import signal

import psutil
import pytest

from jupyter_ddl.backends.local import LocalBackend
from jupyter_ddl.models import JobState, ReplicaState, RestartPolicy
from tests.local.conftest import lines, ready_spare, submit, wait, wait_line
from tests.local.test_faults import (
    SPAWNER,
    kill_supervisor,
    nothing_left,
    recorded,
    reported_pids,
    until,
    wait_gone,
)
from tests.support import require

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]
DDP = {"Master": 1, "Worker": 1}


def warm_job(backend: LocalBackend, data_dir, code: str) -> str:
    require.module("torch")
    spare = ready_spare(data_dir)
    # Never: a PyTorchJob restarts a failed replica by default (OnFailure)
    name = submit(backend, code, "torch-ddp", DDP, restart_policy=RestartPolicy.NEVER)
    record = json.loads((backend.job_dir(name) / "supervisor.json").read_text())
    assert psutil.Process(record["pid"]).ppid() == spare  # the spare forked its supervisor
    return name


def spawned_warm_job(backend: LocalBackend, data_dir) -> tuple[str, object, set[int]]:
    """A running warm 2-replica job whose six children were started and recorded."""
    name = warm_job(backend, data_dir, SPAWNER)
    for rid in ("master-0", "worker-0"):
        wait_line(backend, name, rid, "children ")
    job_dir = backend.job_dir(name)
    replicas = {r.pid for r in backend.get(name).replicas}
    pids = reported_pids(backend, name) | replicas
    # housekeeping records them; a loaded machine (CI beside other work) takes longer
    until(
        lambda: pids <= recorded(job_dir),
        timeout=90,
        what="replicas and children in processes.json",
    )
    return name, job_dir, pids


def test_killed_warm_supervisor_takes_its_forked_replicas(backend, data_dir):
    name, job_dir, pids = spawned_warm_job(backend, data_dir)
    replicas = kill_supervisor(job_dir)
    assert len(replicas) == 2
    wait_gone(replicas, "forked replicas gone with their supervisor")
    status = backend.get(name)
    assert status.state == JobState.FAILED
    assert "stopped unexpectedly" in status.message
    assert {r.state for r in status.replicas} == {ReplicaState.TERMINATED}
    nothing_left(job_dir, pids)
    assert any(t.startswith("children ") for t in lines(backend, name, "worker-0"))


@pytest.mark.parametrize("how", ["cancel", "delete"])
def test_cancel_or_delete_after_the_warm_supervisor_died(backend, data_dir, how):
    name, job_dir, pids = spawned_warm_job(backend, data_dir)
    kill_supervisor(job_dir)
    getattr(backend, how)(name)
    nothing_left(job_dir, pids)
    assert not job_dir.exists() if how == "delete" else backend.get(name).state.finished


def test_killed_forked_replica_fails_the_job_and_leaves_nothing(backend, data_dir):
    name, job_dir, pids = spawned_warm_job(backend, data_dir)
    victim = next(r.pid for r in backend.get(name).replicas if r.id == "worker-0")
    os.kill(victim, signal.SIGKILL)
    status = wait(backend, name, timeout=60)
    assert status.state == JobState.FAILED
    assert "worker-0" in status.message and "SIGKILL" in status.message
    nothing_left(job_dir, pids)


def test_cancel_right_after_the_hand_over_ends_cancelled(backend, data_dir):
    name = warm_job(backend, data_dir, "import time\ntime.sleep(600)\n")
    status = backend.cancel(name)
    assert status.state == JobState.CANCELLED, status.message
    assert status.message == "cancelled by the user"
    nothing_left(backend.job_dir(name))
    assert (backend.job_dir(name) / "supervisor.log").read_text() == ""


def test_a_child_in_a_new_session_ends_with_the_warm_job(backend, data_dir):
    code = (
        "import subprocess\n"
        "p = subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
        "print('children', p.pid, flush=True)\n"
    )
    name = warm_job(backend, data_dir, code)
    status = wait(backend, name, timeout=60)
    assert status.state == JobState.SUCCEEDED, status.message
    pids = reported_pids(backend, name)
    assert len(pids) == 2
    nothing_left(backend.job_dir(name), pids)
