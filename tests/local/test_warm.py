"""Warm replica interpreters with real processes: a replica forked from a spare
supervisor is what a fresh one is, jobs do not see each other, the kernel's CUDA
state never reaches a replica, and a spare that dies mid-hand-over leaves a cold job
that says why and nothing in the process table."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading

import psutil
import pytest

from jupyter_ddl.backends.local import LocalBackend, warm
from jupyter_ddl.config import Config
from jupyter_ddl.models import JobState
from tests.local.conftest import lines, ready_spare, submit, wait
from tests.local.test_faults import nothing_left, until
from tests.support import require

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
DDP = {"Master": 1, "Worker": 1}

# What a replica's process is: environment, modules, paths, descriptors, signals,
# threads, priority and session; printed as one line.
PROBE = r"""
import json, os, random, signal, sys, torch

def _status():
    keys = ("Umask", "SigBlk", "SigIgn", "SigCgt", "Cpus_allowed_list", "NoNewPrivs")
    with open("/proc/self/status") as f:
        pairs = [line.split(":", 1) for line in f]
    return {k: v.strip() for k, v in pairs if k in keys}

def _fds():  # standard streams by number; the rest (gloo's, opened by threads) by kind
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        kind = target if target.startswith("/") else target.split(":")[0]
        out.append(f"{fd}:{kind}" if int(fd) < 3 else kind)
    return sorted(out)

_state = {
    "env": dict(os.environ),
    "modules": sorted(m for m in sys.modules if m.partition(".")[0] not in sys.stdlib_module_names),
    "path": sys.path, "argv": sys.argv, "orig_argv": sys.orig_argv, "cwd": os.getcwd(),
    "flags": list(sys.flags), "status": _status(), "fds": _fds(),
    "nice": os.getpriority(os.PRIO_PROCESS, 0),
    "own_session": os.getsid(0) == os.getpid() == os.getpgid(0),
    "threads": torch.get_num_threads(), "interop": torch.get_num_interop_threads(),
    "signals": {s.name: repr(signal.getsignal(s)) for s in (
        signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE, signal.SIGCHLD)},
    "stdio": [(s.encoding, s.errors, s.write_through) for s in (sys.stdout, sys.stderr)],
    "main": sorted(k for k in globals() if k.startswith("__")),
    "cuda": [torch.cuda.is_initialized(), torch.cuda._is_in_bad_fork()],
    "random": random.random(),
    "parent": os.getppid(),
}
print("STATE " + json.dumps(_state), flush=True)
"""
# differ by nature between two runs of a job: ports, pids, the random seed
DIFFERENT = {"random", "parent"}


def states(backend: LocalBackend, name: str) -> dict[str, dict]:
    return {
        line.replica: json.loads(line.text[len("STATE ") :])
        for line in backend.logs(name)
        if line.text.startswith("STATE ")
    }


def supervisor_record(backend: LocalBackend, name: str) -> dict:
    return json.loads((backend.job_dir(name) / "supervisor.json").read_text())


def test_a_warm_replica_is_what_a_cold_one_is(data_dir):
    require.module("torch")
    cold_backend = LocalBackend(Config(local_warm_seconds=0))
    name = submit(cold_backend, PROBE, "torch-ddp", DDP, name="probe")
    assert wait(cold_backend, name).state == JobState.SUCCEEDED
    assert not supervisor_record(cold_backend, name).get("warm")
    assert not any(t.startswith("cold start") for t in lines(cold_backend, name, "master-0"))
    cold = states(cold_backend, name)
    cold_backend.delete(name)

    spare = ready_spare(data_dir)
    backend = LocalBackend()
    submit(backend, PROBE, "torch-ddp", DDP, name="probe")  # the same job again
    status = wait(backend, name)
    assert status.state == JobState.SUCCEEDED, status.message
    record = supervisor_record(backend, name)
    # the spare forked the supervisor into a session of its own
    assert record["warm"] and record["spare"] == spare and record["pid"] != spare
    forked = states(backend, name)
    assert set(forked) == set(cold) == {"master-0", "worker-0"}
    for rid, got in forked.items():
        want = cold[rid]
        assert got["parent"] == record["pid"]
        for port in ("MASTER_PORT", "PET_MASTER_PORT"):  # reserved anew for each run
            got["env"].pop(port), want["env"].pop(port)
        for key in sorted(set(want) - DIFFERENT):
            assert got[key] == want[key], (rid, key, got[key], want[key])
        assert got["cuda"] == [False, False] and got["own_session"] and got["nice"] == 0
    # forked replicas do not share the spare's random state
    assert forked["master-0"]["random"] != forked["worker-0"]["random"]
    nothing_left(backend.job_dir(name))


CAREFUL = """
import os, sys
assert "psutil" not in sys.modules and "jupyter_ddl" not in sys.modules, sorted(sys.modules)
assert "LEAK" not in os.environ and "LEFT_BEHIND" not in globals()
import psutil  # jupyter_ddl's supervisor imported it: the cell gets its own
LEFT_BEHIND = os.environ["LEAK"] = "yes"
print("clean", rank, flush=True)
marker = os.path.join(os.environ["MARKS"], f"{rank}-{os.getpid()}")
open(marker, "w").close()
if len(os.listdir(os.environ["MARKS"])) <= 2:
    sys.exit(3)  # the first run of each rank fails: restarted, forked again
"""


def test_jobs_and_restarts_do_not_see_each_other(data_dir, tmp_path):
    require.module("torch")
    backend = LocalBackend()
    for n in range(2):  # two jobs in a row, both warm
        marks = tmp_path / f"marks-{n}"
        marks.mkdir()
        ready_spare(data_dir)
        name = submit(
            backend, CAREFUL, "torch-ddp", DDP, env={"MARKS": str(marks)},
            restart_policy="OnFailure",
        )  # fmt: skip
        status = wait(backend, name)
        assert status.state == JobState.SUCCEEDED, status.message
        assert supervisor_record(backend, name)["warm"]
        assert sum(r.restarts for r in status.replicas) >= 1  # forked again by the same process
        runs = [t for t in lines(backend, name, "master-0") if t.startswith("clean")]
        assert len(runs) >= 2 and len(os.listdir(marks)) >= 3
        nothing_left(backend.job_dir(name))


def test_the_kernels_cuda_state_never_reaches_a_replica(data_dir, monkeypatch):
    require.module("torch")
    import torch

    # this process plays the kernel: it "initialised CUDA" before the job and the spare
    monkeypatch.setattr(torch.cuda, "_initialized", True)
    assert torch.cuda.is_initialized()
    ready_spare(data_dir)
    backend = LocalBackend()
    name = submit(backend, PROBE, "torch-ddp", DDP)
    assert wait(backend, name).state == JobState.SUCCEEDED
    assert supervisor_record(backend, name)["warm"]
    assert {rid: s["cuda"] for rid, s in states(backend, name).items()} == {
        "master-0": [False, False],
        "worker-0": [False, False],
    }


def test_a_spare_killed_mid_hand_over_leaves_a_cold_job_and_nothing_else(data_dir):
    require.module("torch")
    spare = psutil.Process(ready_spare(data_dir))
    spare.suspend()  # it accepts no hand-over until killed below
    backend = LocalBackend()
    names: list[str] = []
    submitter = threading.Thread(
        target=lambda: names.append(submit(backend, "print('ran', flush=True)\n", "torch-ddp", DDP))
    )
    submitter.start()

    def waiting_for_the_answer() -> bool:
        frame = sys._current_frames().get(submitter.ident or 0)
        while frame is not None:
            if frame.f_code is warm.read_line.__code__:
                return True
            frame = frame.f_back
        return False

    until(waiting_for_the_answer, timeout=60, what="the kernel waiting for the spare's answer")
    spare.kill()
    submitter.join(30)
    name = names[0]
    status = wait(backend, name)
    assert status.state == JobState.SUCCEEDED, status.message
    first = lines(backend, name, "master-0")[0]
    assert first == "cold start: the warm interpreter ended during the hand-over", first
    assert "spare" not in supervisor_record(backend, name)
    assert not psutil.pid_exists(spare.pid) or spare.status() == psutil.STATUS_ZOMBIE
    nothing_left(backend.job_dir(name))
    root = warm.warm_dir(data_dir)
    assert not (root / f"{spare.pid}.sock").exists() and not (root / f"{spare.pid}.json").exists()


def test_warm_is_the_default_and_the_config_key_turns_it_off(data_dir):
    require.module("torch")
    root = warm.warm_dir(data_dir)
    off = LocalBackend(Config(local_warm_seconds=0))
    name = submit(off, "print('ran', flush=True)\n", "torch-ddp", DDP)
    assert wait(off, name).state == JobState.SUCCEEDED
    assert lines(off, name, "master-0") == ["ran"]  # no "cold start" line: asked for
    assert not list(root.glob("*.json"))  # and no spare started
    on = LocalBackend()  # the default
    first = submit(on, "print('ran', flush=True)\n", "torch-ddp", DDP)
    assert wait(on, first).state == JobState.SUCCEEDED
    assert lines(on, first, "master-0")[0].startswith("cold start: no warm interpreter was running")
    spare = until(lambda: list(root.glob("*.sock")), timeout=120, what="the spare it started")
    second = submit(on, "print('ran', flush=True)\n", "torch-ddp", DDP)
    assert wait(on, second).state == JobState.SUCCEEDED
    assert supervisor_record(on, second)["spare"] == int(spare[0].stem)
    assert lines(on, second, "master-0") == ["ran"]


def test_a_variable_read_at_import_makes_the_replicas_cold_and_says_which(data_dir):
    require.module("torch")
    ready_spare(data_dir)
    backend = LocalBackend()
    name = submit(backend, "print('ran', flush=True)\n", "torch-ddp", DDP, env={"OMP_NUM_THREADS": "1"})  # fmt: skip
    status = wait(backend, name)
    assert status.state == JobState.SUCCEEDED, status.message
    assert supervisor_record(backend, name)["warm"]  # the supervisor was, its replicas not
    assert lines(backend, name, "master-0") == [
        "cold start: OMP_NUM_THREADS is not what the warm interpreter was started with",
        "ran",
    ]
    nothing_left(backend.job_dir(name))


def test_an_idle_spare_exits_and_leaves_no_files(data_dir):
    root = warm.warm_dir(data_dir)
    proc = warm.start_spare(root, 2, os.environ)
    assert proc is not None
    assert warm.start_spare(root, 2, os.environ) is None  # one is starting already
    assert proc.wait(120) == 0
    assert not list(root.glob("*.sock")) and not list(root.glob("*.json"))
    proc = warm.start_spare(root, 600, os.environ)
    until(lambda: list(root.glob("*.sock")), timeout=120, what="a listening spare")
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(30) == 0
    assert not list(root.glob("*.sock")) and not list(root.glob("*.json"))
    assert (root / "spare.log").read_text() == ""
