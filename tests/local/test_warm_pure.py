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
        ("tf-multi-worker-mirrored", {"Worker": 2}, True),
        ("tf-parameter-server", {"Chief": 1, "Worker": 1, "PS": 1}, True),
        ("tf-mirrored", {"Worker": 1}, True),
        ("horovod", {"Launcher": 1, "Worker": 2}, False),
    ],
)
def test_torch_and_tensorflow_strategies_have_a_warm_path(strategy, replicas, warm_path):
    job = spec(strategy, replicas=replicas)
    assert warm.has_warm_path(job, "import tensorflow as tf\n") is warm_path
    if warm_path:  # a spare of the job's own framework serves it
        framework = job.shape.strategy.framework
        assert warm.module_of(job) == {"pytorch": "torch", "tensorflow": "tensorflow"}[framework]


@pytest.mark.parametrize(
    ("cell", "uses"),
    [
        ("import tensorflow as tf\nprint(tf.__version__)\n", True),
        ("from tensorflow import keras\n", True),
        ("import keras\n", True),
        ("with strategy.scope():\n    pass\n", True),  # the shim makes it: an import
        ("print('hello')\n", False),
        ("import numpy as np\nstrategy = 3\n", False),  # assigned, never read
        ("def broken(:\n", False),
    ],
)
def test_a_tensorflow_job_has_a_warm_path_only_when_its_cell_imports_tensorflow(cell, uses):
    job = spec("tf-multi-worker-mirrored", replicas={"Worker": 2})
    assert warm.has_warm_path(job, cell) is uses
    assert warm.has_warm_path(spec(), cell) is True  # the shim imports torch anyway


def test_tf_config_is_each_replicas_and_tfs_other_variables_are_the_spares():
    fresh = {"TF_CPP_MIN_LOG_LEVEL": "2", "PATH": "/bin"}
    launch_env = {**fresh, "TF_CONFIG": '{"task": {"type": "worker", "index": 1}}'}
    assert forked.startup_difference(fresh, launch_env) is None
    assert forked.startup_difference(fresh, {**launch_env, "TF_CPP_MIN_LOG_LEVEL": "0"}) == (
        "TF_CPP_MIN_LOG_LEVEL"
    )
    assert forked.startup_difference(fresh, {**launch_env, "TF_USE_LEGACY_KERAS": "0"}) == (
        "TF_USE_LEGACY_KERAS"
    )
    assert forked.startup_difference(fresh, {**launch_env, "KERAS_BACKEND": "jax"}) == (
        "KERAS_BACKEND"
    )


def test_a_job_setting_a_variable_the_import_sets_otherwise_starts_cold():
    fresh = forked.Fresh.capture(set(), [], {}, {"TF2_BEHAVIOR": "1"})
    (same, other) = [
        launch.Launch("Worker", 0, [sys.executable, "-u", "main.py"], env)
        for env in ({"TF2_BEHAVIOR": "1"}, {"TF2_BEHAVIOR": "0"})
    ]
    assert forked.why_cold(same, fresh) is None
    assert forked.why_cold(other, fresh) == (
        "the job sets TF2_BEHAVIOR, which importing the framework sets to 1"
    )


def test_threads_python_did_not_start_are_found():
    assert forked.foreign_threads([10, 11, 12], [10, None, 12]) == [11]
    assert forked.foreign_threads([10], [10, 99]) == []


def test_the_shims_tensorflow_defaults_are_what_a_spare_imports_with():
    from jupyter_ddl.runtime import ddl_runtime

    got = warm.import_defaults("tensorflow")
    assert got == ddl_runtime.tensorflow_import_env() and got["TF_CPP_MIN_LOG_LEVEL"] == "2"
    assert warm.import_defaults("torch") == {}


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
