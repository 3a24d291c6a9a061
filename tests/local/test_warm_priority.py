"""How much CPU a spare's import takes, with real processes: least favoured while the
cold job that started it runs, at the normal weight once that job ends or once a job
finds it still starting; the supervisors and replicas it forks always at the normal
weight. Linux shares the CPU evenly between sessions (autogroups) whatever their
threads' nice values, so the weight is the spare session's autogroup nice value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest

from jupyter_ddl.backends.local import LocalBackend, boot, warm
from jupyter_ddl.backends.local.jobdir import JobDir
from jupyter_ddl.models import JobState
from tests.local.conftest import ready_spare, submit, wait, wait_line
from tests.local.test_faults import until
from tests.support import require

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
DDP = {"Master": 1, "Worker": 1}
GROUPED = os.path.exists("/proc/self/autogroup")
BUSY = "while True: pass"


def _autogroup_nice(pid: int) -> int:
    with open(f"/proc/{pid}/autogroup") as f:  # "/autogroup-123 nice 19"
        return int(f.read().split()[-1])


def _job_of(data_dir, sup: subprocess.Popen[bytes]) -> JobDir:
    """A job directory whose supervisor record names ``sup``."""
    jd = JobDir(data_dir / "jobs" / "stand-in")
    jd.root.mkdir(parents=True)
    jd.supervisor_path.write_text(json.dumps({"pid": sup.pid, "create_time": _started(sup)}))
    return jd


def _started(proc: subprocess.Popen[bytes]) -> float:
    return psutil.Process(proc.pid).create_time()


@pytest.fixture
def busy_job() -> Iterator[subprocess.Popen[bytes]]:
    """A stand-in for a cold job that trains: its "supervisor" (a sleeping process)
    and one CPU-bound process per core, each in a session (so an autogroup) of its own,
    as replicas are. The spare's import then gets almost no CPU while least favoured."""
    sup = subprocess.Popen(["sleep", "600"], start_new_session=True)
    hogs = [
        subprocess.Popen([sys.executable, "-c", BUSY], start_new_session=True)
        for _ in range(len(os.sched_getaffinity(0)))
    ]
    try:
        yield sup
    finally:
        for p in (sup, *hogs):
            p.kill()
            p.wait()


def test_beside_names_a_running_process_with_its_start_time():
    me = boot.beside(os.getpid())
    pid, _, ticks = me.partition(":")
    assert pid == str(os.getpid()) and ticks.isdigit()
    assert boot.beside(None) == ""
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert boot.beside(gone.pid) == ""


@pytest.mark.skipif(not GROUPED, reason="this kernel has no autogroups (sched_autogroup)")
def test_the_import_is_least_favoured_while_its_cold_job_runs_then_normal(data_dir, busy_job):
    require.module("torch")
    root = warm.warm_dir(data_dir)
    proc = warm.start_spare(root, 600, os.environ, job=_job_of(data_dir, busy_job))
    assert proc is not None
    until(lambda: _autogroup_nice(proc.pid) == 19, timeout=30, what="the least favoured import")
    # while the job runs and every core is busy, the import crawls and stays least
    # favoured: never the normal weight without a socket
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        listening = (root / f"{proc.pid}.sock").exists()
        assert listening or _autogroup_nice(proc.pid) == 19
        time.sleep(0.1)
    busy_job.kill()  # the job ends: the import goes on at the normal weight
    busy_job.wait()
    until(lambda: _autogroup_nice(proc.pid) == 0, timeout=10, what="the normal weight")
    assert ready_spare(data_dir, timeout=240) == proc.pid


@pytest.mark.skipif(not GROUPED, reason="this kernel has no autogroups (sched_autogroup)")
def test_a_job_that_finds_the_spare_starting_puts_it_at_the_normal_weight(data_dir, busy_job):
    require.module("torch")
    root = warm.warm_dir(data_dir)
    proc = warm.start_spare(root, 600, os.environ, job=_job_of(data_dir, busy_job))
    assert proc is not None
    until(lambda: _autogroup_nice(proc.pid) == 19, timeout=30, what="the least favoured import")
    if (root / f"{proc.pid}.sock").exists():
        pytest.fail("the spare imported torch beside a busy core per CPU within seconds")
    jd = JobDir(data_dir / "jobs" / "nobody")
    assert warm.hand_over(root, jd, {}) == "the warm interpreter is still starting"
    assert _autogroup_nice(proc.pid) == 0
    assert warm.promote(proc.pid, _started(proc))  # again: harmless
    assert not warm.promote(proc.pid, _started(proc) - 100)  # not that process: untouched
    assert busy_job.poll() is None  # the job still runs; the spare gets ready regardless
    assert ready_spare(data_dir, timeout=240) == proc.pid


def test_a_spare_started_beside_no_job_imports_at_the_normal_weight(data_dir):
    require.module("torch")
    proc = warm.start_spare(warm.warm_dir(data_dir), 600, os.environ)
    assert proc is not None
    for _ in range(20):
        if GROUPED:
            assert _autogroup_nice(proc.pid) == 0
        assert os.getpriority(os.PRIO_PROCESS, proc.pid) == 0
        time.sleep(0.05)
    assert ready_spare(data_dir) == proc.pid


def test_a_cold_job_starts_its_spare_beside_it_and_the_spare_forks_at_the_normal_weight(
    data_dir,
):
    """The backend names the cold job's supervisor to the spare it starts; each
    supervisor the spare forks gets a session, and so an autogroup, of its own at the
    normal weight, and so do the replicas; the spare stays for the next job."""
    require.module("torch")
    backend = LocalBackend()
    first = submit(backend, "print('first', flush=True)\n", "torch-ddp", DDP)
    sup = JobDir(backend.job_dir(first)).supervisor()
    assert sup is not None
    spare = ready_spare(data_dir, timeout=240)
    argv = psutil.Process(spare).cmdline()
    assert argv[argv.index("torch") + 3].partition(":")[0] == str(sup["pid"])
    assert wait(backend, first).state == JobState.SUCCEEDED
    if GROUPED:
        assert _autogroup_nice(spare) == 0
    name = submit(
        backend, "import time\nprint('up', flush=True)\ntime.sleep(60)\n", "torch-ddp", DDP
    )
    try:
        wait_line(backend, name, "worker-0", "up")
        sup2 = JobDir(backend.job_dir(name)).supervisor()
        assert sup2 is not None and psutil.Process(sup2["pid"]).ppid() == spare
        assert os.getsid(sup2["pid"]) == sup2["pid"] != os.getsid(spare)
        replicas = [r.pid for r in backend.get(name).replicas]
        assert replicas and all(
            os.getsid(p) not in (os.getsid(spare), sup2["pid"]) for p in replicas
        )
        if GROUPED:
            assert [_autogroup_nice(p) for p in (sup2["pid"], *replicas)] == [0, 0, 0]
    finally:
        backend.cancel(name)
    assert wait(backend, name).state == JobState.CANCELLED
    assert (warm.warm_dir(data_dir) / f"{spare}.sock").exists()  # ready for the next
