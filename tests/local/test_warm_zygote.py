"""A spare that is never consumed: it forks a supervisor per job, as a zygote does.

Jobs in a row through the same spare see nothing of each other (modules, globals,
environment, the spare's memory of a request); the spare stays while its jobs run and
``local_warm_seconds`` after the last; killed at any moment it leaves the jobs it
started running and the next job cold with the reason in its first line."""

from __future__ import annotations

import json
import os
import time

import psutil
import pytest

from jupyter_ddl.backends.local import LocalBackend, warm
from jupyter_ddl.config import Config
from jupyter_ddl.models import JobState
from tests.local.conftest import lines, ready_spare, submit, wait, wait_line
from tests.local.test_faults import nothing_left, until
from tests.support import require

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
DDP = {"Master": 1, "Worker": 1}

# Leaves a trace of itself wherever a later job could find it, then reports what it
# finds of an earlier one.
TRACER = r"""
import builtins, json, os, sys, torch
tag = os.environ["TAG"]
found = {
    "env": sorted(k for k in os.environ if k.startswith("TRACE_")),
    "proc_env": sorted(
        k for k in open("/proc/self/environ", "rb").read().decode(errors="replace").split("\0")
        if k.startswith("TRACE_")
    ),
    "parent_env": sorted(
        k for k in open(f"/proc/{os.getppid()}/environ", "rb").read().decode(errors="replace").split("\0")
        if k.startswith("TRACE_")
    ),
    "builtins": sorted(k for k in vars(builtins) if k.startswith("trace_")),
    "torch": sorted(k for k in vars(torch) if k.startswith("trace_")),
    "modules": sorted(m for m in sys.modules if m.startswith("trace_mod")),
    "globals": sorted(k for k in globals() if k.startswith("trace_")),
}
print("FOUND " + json.dumps(found), flush=True)
sys.path.insert(0, os.environ["MODDIR"])
__import__(f"trace_mod_{tag}")
setattr(builtins, f"trace_{tag}", 1)
setattr(torch, f"trace_{tag}", 1)
globals()[f"trace_{tag}"] = 1
os.environ[f"TRACE_SET_{tag}"] = "1"
"""


def found(backend: LocalBackend, name: str) -> dict[str, dict]:
    return {
        line.replica: json.loads(line.text[len("FOUND ") :])
        for line in backend.logs(name)
        if line.text.startswith("FOUND ")
    }


def supervisor_record(backend: LocalBackend, name: str) -> dict:
    return json.loads((backend.job_dir(name) / "supervisor.json").read_text())


def test_jobs_in_a_row_through_one_spare_see_nothing_of_each_other(data_dir, tmp_path):
    require.module("torch")
    spare = ready_spare(data_dir)
    backend = LocalBackend()
    for tag in ("one", "two", "three"):
        (tmp_path / f"trace_mod_{tag}.py").write_text("X = 1\n")
    seen = []
    for n, tag in enumerate(("one", "two", "three")):
        env = {"TAG": tag, "MODDIR": str(tmp_path), f"TRACE_ENV_{tag}": "secret"}
        name = submit(backend, TRACER, "torch-ddp", DDP, env=env)
        status = wait(backend, name)
        assert status.state == JobState.SUCCEEDED, status.message
        record = supervisor_record(backend, name)
        assert record["warm"] and record["spare"] == spare  # the same spare every time
        assert lines(backend, name, "master-0")[0].startswith("FOUND ")  # no cold start
        got = found(backend, name)
        # its own variable only; nothing of an earlier job anywhere
        own = [f"TRACE_ENV_{tag}"]
        for rid, what in got.items():
            assert what["env"] == own, (n, rid, what)
            # a forked replica's initial block is its supervisor's (scrubbed), a cold one's its own
            assert set(what["proc_env"]) <= set(own), (n, rid, what)
            assert what["parent_env"] == [], (n, rid, what)  # the supervisor holds no job's
            rest = {k: v for k, v in what.items() if k not in ("env", "proc_env", "parent_env")}
            assert rest == {k: [] for k in rest}, (n, rid, what)
        seen.append(got)
        nothing_left(backend.job_dir(name))
    assert len(seen) == 3
    # the spare's own environment never held a job's variable
    spare_env = psutil.Process(spare).environ()
    assert not [k for k in spare_env if k.startswith("TRACE_") or k in ("TAG", "MODDIR")]


def test_a_spare_stays_while_its_job_runs_and_idle_seconds_after(data_dir):
    require.module("torch")
    root = warm.warm_dir(data_dir)
    idle = 10.0  # long enough to submit in, on a loaded machine
    proc = warm.start_spare(root, idle, os.environ)
    assert proc is not None
    until(lambda: list(root.glob("*.sock")), timeout=120, what="a listening spare")
    backend = LocalBackend(Config(local_warm_seconds=idle))
    name = submit(backend, "import time\nprint('up', flush=True)\ntime.sleep(20)\n", "torch-ddp", DDP)  # fmt: skip
    wait_line(backend, name, "master-0", "up")
    assert supervisor_record(backend, name)["spare"] == proc.pid
    time.sleep(idle + 2)  # past the idle time, while the job runs: the spare stays
    assert proc.poll() is None and (root / f"{proc.pid}.sock").exists()
    assert wait(backend, name).state == JobState.SUCCEEDED
    ended = time.monotonic()
    assert proc.wait(idle + 60) == 0  # then it goes, on its own, idle seconds later
    assert time.monotonic() - ended >= idle - 1.5  # not right away (the job's end is seen late)
    assert not list(root.glob("*.sock")) and not list(root.glob("*.json"))


@pytest.mark.parametrize("moment", ["idle", "while its job runs"])
def test_a_spare_killed_at_any_moment_leaves_a_cold_start_with_the_reason(data_dir, moment):
    require.module("torch")
    spare = psutil.Process(ready_spare(data_dir))
    backend = LocalBackend()
    running = None
    if moment == "while its job runs":
        running = submit(backend, "import time\nprint('up', flush=True)\ntime.sleep(5)\nprint('done', flush=True)\n", "torch-ddp", DDP)  # fmt: skip
        wait_line(backend, running, "master-0", "up")
    spare.kill()  # mid-hand-over: test_warm.py
    until(lambda: not psutil.pid_exists(spare.pid) or spare.status() == psutil.STATUS_ZOMBIE, what="the spare gone")  # fmt: skip
    name = submit(backend, "print('ran', flush=True)\n", "torch-ddp", DDP)
    status = wait(backend, name)
    assert status.state == JobState.SUCCEEDED, status.message
    first = lines(backend, name, "master-0")[0]
    assert first in (
        "cold start: no warm interpreter was running (one starts now, for the next job)",
        "cold start: the warm interpreter had stopped",
    ), first
    if running is not None:  # the job it had started goes on to its end
        assert wait(backend, running).state == JobState.SUCCEEDED
        assert lines(backend, running, "master-0") == ["up", "done"]
    root = warm.warm_dir(data_dir)
    assert not (root / f"{spare.pid}.sock").exists() and not (root / f"{spare.pid}.json").exists()
    # a new spare was started for the next job
    until(lambda: [p for p in root.glob("*.json") if p.stem != str(spare.pid)], what="a new spare")
