"""Which jobs and replicas may start from a warm interpreter, and why the others say
they start cold (pure: no process is started)."""

from __future__ import annotations

import sys
from dataclasses import replace

import pytest

from jupyter_ddl.backends.local import forked, launch, warm
from jupyter_ddl.config import Config
from jupyter_ddl.core.contract import local_endpoints
from jupyter_ddl.models import JobSpec


def spec(strategy: str = "torch-ddp", **fields) -> JobSpec:
    replicas = fields.pop("replicas", {"Master": 1, "Worker": 1})
    return JobSpec(name="w", strategy=strategy, replicas=replicas, **fields)


@pytest.mark.parametrize(
    ("strategy", "replicas", "warm_path"),
    [
        ("torch-ddp", {"Master": 1, "Worker": 1}, True),
        ("torch-dp", {"Master": 1}, True),
        ("ignite", {"Master": 1, "Worker": 1}, True),
        ("deepspeed", {"Master": 1, "Worker": 1}, True),
        ("tf-multi-worker-mirrored", {"Worker": 2}, False),
        ("horovod", {"Launcher": 1, "Worker": 2}, False),
    ],
)
def test_only_torch_strategies_have_a_warm_path(strategy, replicas, warm_path):
    assert warm.has_warm_path(spec(strategy, replicas=replicas)) is warm_path


def test_a_torch_job_that_cannot_fork_says_why():
    python = sys.executable
    assert warm.cold_reason(spec(), [], python) is None
    assert "requirements" in warm.cold_reason(spec(), ["tqdm"], python)
    assert warm.cold_reason(spec(command=["bash", "-c", "x"]), [], python) == (
        "the job runs its own command"
    )
    many = replace(spec(), nproc_per_node=2)
    assert (
        warm.cold_reason(many, [], python) == "torchrun starts the processes (--nproc-per-node 2)"
    )
    elastic = spec("torch-elastic", replicas={"Worker": 2})
    assert warm.cold_reason(elastic, [], python) == "torchrun starts the processes (elastic)"
    assert "another interpreter (python = /usr/bin/python3)" in warm.cold_reason(
        spec(), [], "/usr/bin/python3"
    )


def test_startup_variables_must_be_the_warm_interpreters():
    base = {"PATH": "/bin", "OMP_NUM_THREADS": "2", "HOME": "/root", "PYTHONUNBUFFERED": "1"}
    assert forked.startup_difference(base, {**base, "RANK": "1", "PATH": "/usr/bin"}) is None
    assert forked.startup_difference(base, {**base, "PYTHONUNBUFFERED": "0"}) is None  # -u
    assert forked.startup_difference(base, {**base, "OMP_NUM_THREADS": "1"}) == "OMP_NUM_THREADS"
    assert forked.startup_difference(base, {**base, "LD_PRELOAD": "x.so"}) == "LD_PRELOAD"
    assert forked.startup_difference(base, {"PATH": "/bin"}) == "HOME"


def plan(job: JobSpec, **env: str) -> list[launch.Launch]:
    environ = {"PATH": "/bin", "HOME": "/root", **env}
    return launch.plan(
        job, python=sys.executable, entry="/j/bundle/main.py", hostfile="/j/hostfile",
        endpoints=local_endpoints(job, list(range(7000, 7000 + job.shape.total))),
        gpus={}, environ=environ,
    )  # fmt: skip


def test_which_replicas_fork():
    fresh = forked.Fresh(sys.executable, frozenset(), [], {"PATH": "/bin", "HOME": "/root"})
    assert [forked.why_cold(x, fresh) for x in plan(spec())] == [None, None]
    threads = plan(spec(), OMP_NUM_THREADS="1")[0]
    assert forked.why_cold(threads, fresh) == (
        "OMP_NUM_THREADS is not what the warm interpreter was started with"
    )
    many = replace(spec(), nproc_per_node=2)
    assert forked.why_cold(plan(many)[0], fresh) == "torchrun starts this replica's processes"
    mpi = next(x for x in plan(spec("horovod", replicas={"Launcher": 1, "Worker": 1})) if x.argv)
    assert forked.why_cold(mpi, fresh) == "mpirun starts the ranks"
    other = forked.Fresh("/opt/python", frozenset(), [], fresh.env)
    assert "another interpreter" in forked.why_cold(plan(spec())[0], other)


def test_the_idle_time_is_a_checked_config_key():
    cfg = Config()
    assert cfg.local_warm_seconds > 0  # on by default
    cfg.set("local_warm_seconds", "0")
    assert cfg.local_warm_seconds == 0.0
    with pytest.raises(Exception, match="local_warm_seconds must be at least 0"):
        cfg.set("local_warm_seconds", "-1")
