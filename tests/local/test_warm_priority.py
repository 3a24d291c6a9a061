"""When a spare imports, with real processes: not while the cold job that started it
runs (even the CPU that job leaves idle is not free to it: a 2-rank gloo job lost
3–13 % of its steps to an import there), but once that job ends or once a job finds it
still starting (that job waits for it to get ready rather than start cold); the
supervisors and replicas it forks always at the normal weight.
Linux shares the CPU evenly between sessions (autogroups) whatever their threads' nice
values: the spare waits with its session's autogroup at nice 19, and a hand-over that
finds it waiting puts that back at nice 0, which the spare reads as its cue."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator

import psutil
import pytest

from jupyter_ddl.backends.local import LocalBackend, boot, warm
from jupyter_ddl.backends.local.jobdir import JobDir
from jupyter_ddl.models import JobState
from tests.local.conftest import lines, ready_spare, submit, wait, wait_line
from tests.local.test_faults import until
from tests.support import require

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
DDP = {"Master": 1, "Worker": 1}
GROUPED = os.path.exists("/proc/self/autogroup")


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
def running_job() -> Iterator[subprocess.Popen[bytes]]:
    """A stand-in for the cold job that starts a spare: its "supervisor" (a sleeping
    process in a session of its own). The machine is otherwise idle, so a spare that
    imported beside it would be listening within seconds."""
    sup = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        yield sup
    finally:
        sup.kill()
        sup.wait()


def _cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def test_beside_names_a_running_process_with_its_start_time():
    me = boot.beside(os.getpid())
    pid, _, ticks = me.partition(":")
    assert pid == str(os.getpid()) and ticks.isdigit()
    assert boot.beside(None) == ""
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert boot.beside(gone.pid) == ""


@pytest.mark.skipif(not GROUPED, reason="this kernel has no autogroups (sched_autogroup)")
def test_the_spare_does_not_import_while_its_cold_job_runs_and_does_once_it_ends(
    data_dir, running_job
):
    require.module("torch")
    root = warm.warm_dir(data_dir)
    proc = warm.start_spare(root, 600, os.environ, job=_job_of(data_dir, running_job))
    assert proc is not None
    until(lambda: _autogroup_nice(proc.pid) == 19, timeout=30, what="the least favoured wait")
    # an import of torch takes CPU-seconds; waiting takes next to none
    time.sleep(1)
    before = _cpu_seconds(proc.pid)
    time.sleep(4)
    assert _cpu_seconds(proc.pid) - before < 0.3
    assert not (root / f"{proc.pid}.sock").exists() and _autogroup_nice(proc.pid) == 19
    assert "libtorch" not in " ".join(m.path for m in psutil.Process(proc.pid).memory_maps())
    running_job.kill()  # the job ends: the import begins, at the normal weight
    running_job.wait()
    until(lambda: _autogroup_nice(proc.pid) == 0, timeout=10, what="the normal weight")
    assert ready_spare(data_dir, timeout=240) == proc.pid


@pytest.mark.skipif(not GROUPED, reason="this kernel has no autogroups (sched_autogroup)")
def test_a_job_that_finds_the_spare_waiting_starts_its_import(data_dir, running_job):
    require.module("torch")
    root = warm.warm_dir(data_dir)
    proc = warm.start_spare(root, 600, os.environ, job=_job_of(data_dir, running_job))
    assert proc is not None
    until(lambda: _autogroup_nice(proc.pid) == 19, timeout=30, what="the least favoured wait")
    assert not warm.promote(proc.pid, _started(proc) - 100)  # not that process: untouched
    assert _autogroup_nice(proc.pid) == 19
    jd = JobDir(data_dir / "jobs" / "nobody")
    assert warm.hand_over(root, jd, {}, wait=0) == "the warm interpreter is still starting"
    assert _autogroup_nice(proc.pid) == 0
    assert warm.promote(proc.pid, _started(proc))  # again: harmless
    assert running_job.poll() is None  # the job still runs; the spare gets ready regardless
    assert ready_spare(data_dir, timeout=240) == proc.pid


@pytest.mark.skipif(not GROUPED, reason="this kernel has no autogroups (sched_autogroup)")
def test_a_job_waiting_for_a_spare_that_dies_stops_waiting_and_says_so(data_dir, running_job):
    """The spare ends while a job waits for it: the job stops waiting then, not at
    READY_WAIT, and its reason says the spare ended and how long it waited."""
    require.module("torch")
    root = warm.warm_dir(data_dir)
    proc = warm.start_spare(root, 600, os.environ, job=_job_of(data_dir, running_job))
    assert proc is not None
    until(lambda: _autogroup_nice(proc.pid) == 19, timeout=30, what="the least favoured wait")
    threading.Timer(1.0, proc.kill).start()
    why = warm.hand_over(root, JobDir(data_dir / "jobs" / "nobody"), {}, wait=warm.READY_WAIT)
    proc.wait()
    assert isinstance(why, str) and why.startswith(
        "the warm interpreter ended before it was ready ("
    )
    assert 0.5 < float(why.rsplit("(", 1)[1].split()[0]) < warm.READY_WAIT


@pytest.mark.skipif(not GROUPED, reason="this kernel has no autogroups (sched_autogroup)")
def test_a_job_submitted_while_the_first_runs_waits_for_the_spare_and_starts_warm(data_dir):
    """The second job of a notebook, submitted while the first (cold) one still runs,
    finds the spare waiting beside it: it starts the spare's import and waits for it
    rather than import the framework cold a second time beside it."""
    require.module("torch")
    backend = LocalBackend()
    first = submit(
        backend, "import time\nprint('up', flush=True)\ntime.sleep(120)\n", "torch-ddp", DDP
    )
    try:
        wait_line(backend, first, "worker-0", "up")
        spares = list(warm.warm_dir(data_dir).glob("*.json"))
        assert len(spares) == 1 and not list(warm.warm_dir(data_dir).glob("*.sock"))
        spare = int(spares[0].stem)
        assert _autogroup_nice(spare) == 19  # waiting beside the running job
        second = submit(backend, "print('second', flush=True)\n", "torch-ddp", DDP)
        sup = JobDir(backend.job_dir(second)).supervisor()
        assert sup is not None and psutil.Process(sup["pid"]).ppid() == spare
        assert wait(backend, second).state == JobState.SUCCEEDED
        said = lines(backend, second, "worker-0")
        assert "second" in said and not [t for t in said if t.startswith("cold start:")]
        assert backend.get(first).state == JobState.RUNNING  # it ran all along
    finally:
        backend.cancel(first)
    assert wait(backend, first).state == JobState.CANCELLED


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
