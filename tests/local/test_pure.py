"""Pure parts of the local backend and the runtime shim: no processes started."""

from __future__ import annotations

import ast
import json
import multiprocessing
import shutil
import sys
from dataclasses import replace

import pytest

from jupyter_ddl.backends.local import gpus, launch, ports
from jupyter_ddl.backends.local.jobdir import format_log_line, parse_log_line
from jupyter_ddl.backends.local.requirements import cache_key
from jupyter_ddl.core import contract
from jupyter_ddl.core import restarts as policy
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.core.kinds import MPIJOB, PYTORCHJOB, TFJOB
from jupyter_ddl.core.metrics import METRIC_MARKER, parse_metric_line
from jupyter_ddl.errors import ResourceError
from jupyter_ddl.models import JobSpec, JobState, ReplicaState, RestartPolicy
from jupyter_ddl.runtime import ddl_runtime

S, F, R = ReplicaState.SUCCEEDED, ReplicaState.FAILED, ReplicaState.RUNNING


def test_metric_marker_is_the_same_in_shim_and_parser(capsys):
    assert ddl_runtime.METRIC_MARKER == METRIC_MARKER
    ddl_runtime.report(step=4, loss=0.25, acc=1)
    m = parse_metric_line(capsys.readouterr().out.strip())
    assert m is not None and m.step == 4 and m.values == {"loss": 0.25, "acc": 1.0}


def test_bundle_is_deterministic_and_runnable_layout():
    a = build_bundle("print(1)", requirements=["tqdm", "tqdm", " "], notebook="n.ipynb")
    b = build_bundle("print(1)", requirements=["tqdm"], notebook="n.ipynb")
    assert a.digest == b.digest and a.requirements == ["tqdm"]
    shim = {"ddl_runtime.py", "ddl_runtime_torch.py", "ddl_runtime_end.py", "ddl_spawn.py"}
    assert set(a.files) == {"cell.py", "main.py", *shim} and a.entrypoint == "main.py"
    assert a.files["cell.py"] == b"print(1)\n"
    for name in shim:  # stdlib and the framework only: a base image has no jupyter_ddl
        imported = {
            (n.module if isinstance(n, ast.ImportFrom) else n.names[0].name) or ""
            for n in ast.walk(ast.parse(a.files[name]))
            if isinstance(n, (ast.Import, ast.ImportFrom))
        }
        assert imported and not any(m.startswith("jupyter_ddl") for m in imported), name
    assert build_bundle("print(2)").digest != a.digest


@pytest.mark.parametrize(
    ("pol", "code", "sig", "want"),
    [
        (RestartPolicy.NEVER, 0, None, policy.Exit.SUCCEEDED),
        (RestartPolicy.NEVER, 1, None, policy.Exit.FAILED),
        (RestartPolicy.ON_FAILURE, None, 9, policy.Exit.RESTART),
        (RestartPolicy.ON_FAILURE, 0, None, policy.Exit.SUCCEEDED),
        (RestartPolicy.EXIT_CODE, 1, None, policy.Exit.FAILED),
        (RestartPolicy.EXIT_CODE, 137, None, policy.Exit.RESTART),
        (RestartPolicy.EXIT_CODE, None, 15, policy.Exit.RESTART),
        (RestartPolicy.ALWAYS, 0, None, policy.Exit.RESTART),
    ],
)
def test_restart_decisions_follow_the_operator(pol, code, sig, want):
    assert policy.on_exit(pol, code, sig) == want


def test_default_restart_policy_per_kind():
    assert policy.restart_policy(TFJOB, "Worker", None) == RestartPolicy.NEVER
    assert policy.restart_policy(PYTORCHJOB, "Worker", None) == RestartPolicy.ON_FAILURE
    assert policy.restart_policy(MPIJOB, "Launcher", None) == RestartPolicy.ON_FAILURE
    assert policy.restart_policy(MPIJOB, "Worker", None) == RestartPolicy.NEVER
    assert policy.restart_policy(TFJOB, "PS", RestartPolicy.ALWAYS) == RestartPolicy.ALWAYS


def test_job_outcome_per_kind():
    tf_chief = {("Chief", 0): S, ("Worker", 0): R, ("PS", 0): R}
    assert policy.job_outcome(TFJOB, tf_chief) == JobState.SUCCEEDED
    assert policy.job_outcome(TFJOB, {("Worker", 0): S, ("Worker", 1): R}) == JobState.SUCCEEDED
    assert policy.job_outcome(TFJOB, {("Worker", 0): R, ("Worker", 1): S}) is None
    assert (
        policy.job_outcome(PYTORCHJOB, {("Master", 0): S, ("Worker", 0): R}) == JobState.SUCCEEDED
    )
    assert policy.job_outcome(PYTORCHJOB, {("Worker", 0): S, ("Worker", 1): R}) is None
    assert policy.job_outcome(PYTORCHJOB, {("Master", 0): R, ("Worker", 0): F}) == JobState.FAILED
    assert policy.job_outcome(MPIJOB, {("Launcher", 0): S, ("Worker", 0): R}) == JobState.SUCCEEDED


def test_backoff_and_deadline():
    assert not policy.backoff_exceeded(2, None) and policy.backoff_exceeded(0, 0)
    assert not policy.backoff_exceeded(1, 2) and policy.backoff_exceeded(2, 2)
    assert policy.backoff_delay(0) == 0 and policy.backoff_delay(3) > policy.backoff_delay(1)
    assert policy.backoff_delay(50) == 10.0
    assert policy.deadline_passed(100.0, 111.0, 10) and not policy.deadline_passed(100.0, 105.0, 10)
    # reached is passed: the operator fails a job at duration >= activeDeadlineSeconds
    assert policy.deadline_passed(100.0, 110.0, 10)
    assert policy.describe_exit(None, 9) == "signal 9 (SIGKILL)"
    abort = policy.explain_exit(None, 6, ["ok", "terminate called without an active exception"])
    assert "signal 6 (SIGABRT)" in abort and "destroy_process_group" in abort
    assert policy.explain_exit(1, None, ["Traceback"]) == "exit code 1"


def test_gpus_are_partitioned_and_overcommit_refused():
    got = gpus.assign_gpus([("master-0", 1), ("worker-0", 2), ("ps-0", 0)], ["0", "1", "2", "5"])
    assert got == {"master-0": "0", "worker-0": "1,2", "ps-0": ""}
    with pytest.raises(ResourceError) as e:
        gpus.assign_gpus([("worker-0", 2), ("worker-1", 2)], ["0", "1"])
    assert "4 GPUs" in str(e.value) and "has 2" in str(e.value)


def test_detect_gpus_honours_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert gpus.detect_gpus() == ["2", "3"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpus.detect_gpus() == []


def _reserve(args):
    data_dir, job = args
    return ports.reserve(data_dir, job, 4)


def test_ports_never_collide_between_concurrent_jobs(tmp_path):
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        # the pool workers stay alive, so every reservation stays live meanwhile
        got = pool.map(_reserve, [(tmp_path, f"job{i}") for i in range(8)])
        flat = [p for ps in got for p in ps]
        assert len(flat) == len(set(flat)) == 32
        assert set(ports.reserved(tmp_path)) == {f"job{i}" for i in range(8)}
    ports.release(tmp_path, "job0")
    assert "job0" not in ports.reserved(tmp_path)
    # the pool's processes are gone: their reservations are reclaimed
    assert ports.reserved(tmp_path) == {}


def test_releasing_into_a_data_dir_deleted_meanwhile_does_not_make_it_again(tmp_path):
    data = tmp_path / "data"
    ports.reserve(data, "job0", 2)
    shutil.rmtree(data)  # a throw-away data dir, removed while a job still ran
    ports.release(data, "job0")
    assert not data.exists()


def test_log_line_round_trip():
    line = format_log_line(1795300000.25, "stderr", "a  b c")
    t, stream, text = parse_log_line(line)
    assert (t, stream, text) == (pytest.approx(1795300000.25), "stderr", "a  b c")
    assert parse_log_line(format_log_line(1.0, "stdout", ""))[2] == ""


def test_plan_gives_operator_env_and_launchers():
    spec = JobSpec(
        name="j",
        strategy="torch-ddp",
        replicas={"Master": 1, "Worker": 2},
        env={"RANK": "9", "A": "1"},
    )
    eps = contract.local_endpoints(spec, [5001, 5002, 5003])
    outer = {
        "TF_CONFIG": "x",
        "OMPI_COMM_WORLD_RANK": "3",
        "PATH": "/bin",
        "CUDA_VISIBLE_DEVICES": "0",
    }
    plans = launch.plan(
        spec, python="py", entry="/b/main.py", hostfile="/h", endpoints=eps, gpus={}, environ=outer
    )
    w1 = plans[2]
    assert (w1.role, w1.index, w1.argv) == ("Worker", 1, ["py", "-u", "/b/main.py"])
    assert w1.env["RANK"] == "2" and w1.env["WORLD_SIZE"] == "3" and w1.env["MASTER_PORT"] == "5001"
    assert w1.env["A"] == "1" and w1.env["PATH"] == "/bin" and w1.env["CUDA_VISIBLE_DEVICES"] == ""
    assert "TF_CONFIG" not in w1.env and "OMPI_COMM_WORLD_RANK" not in w1.env
    assert w1.env["JUPYTER_DDL_STRATEGY"] == "torch-ddp"
    spec = replace(spec, nproc_per_node=2)
    assert launch.plan(spec, python="py", entry="m", hostfile="/h", endpoints=eps, gpus={}, environ={})[0].argv == [
        "py", "-m", "torch.distributed.run", "m"
    ]  # fmt: skip


def test_plan_mpi_runs_mpirun_in_the_launcher_only():
    spec = JobSpec(name="m", strategy="horovod", replicas={"Launcher": 1, "Worker": 3})
    eps = contract.local_endpoints(spec, [1, 2, 3, 4])
    plans = launch.plan(
        spec,
        python="py",
        entry="m.py",
        hostfile="/j/hostfile",
        endpoints=eps,
        gpus={},
        environ={},
        mpi_port=7,
        as_root=True,
    )
    launcher = next(p for p in plans if p.role == "Launcher")
    workers = [p for p in plans if p.role == "Worker"]
    assert [w.argv for w in workers] == [None, None, None]
    argv = launcher.argv or []
    assert argv[:5] == ["mpirun", "--hostfile", "/j/hostfile", "-n", "3"]
    assert (
        "--allow-run-as-root" in argv and "--oversubscribe" in argv and argv[-2:] == ["-u", "m.py"]
    )
    assert launcher.env["OMPI_MCA_orte_default_hostfile"] == "/j/hostfile"
    assert launcher.env["K_MPI_JOB_ROLE"] == "launcher" and launcher.env["MASTER_PORT"] == "7"


def test_shim_topology_and_self_init_detection():
    cfg = json.dumps(
        {
            "cluster": {"chief": ["a:1"], "worker": ["b:1", "c:1"], "ps": ["d:1"]},
            "task": {"type": "worker", "index": 1},
        }
    )
    assert ddl_runtime.tf_topology(cfg) == {
        "role": "worker",
        "index": 1,
        "rank": 2,
        "world_size": 3,
    }
    assert ddl_runtime.tf_topology("")["world_size"] == 1
    topo = ddl_runtime.torch_topology(
        {
            "OMPI_COMM_WORLD_RANK": "2",
            "OMPI_COMM_WORLD_SIZE": "4",
            "OMPI_COMM_WORLD_LOCAL_RANK": "2",
        }
    )
    assert (topo["rank"], topo["world_size"], topo["local_rank"]) == (2, 4, 2)
    assert ddl_runtime.cell_initialises_itself(
        "import torch.distributed as d\nd.init_process_group('gloo')"
    )
    assert ddl_runtime.cell_initialises_itself("with idist.Parallel(backend='gloo') as p: p.run(f)")
    assert not ddl_runtime.cell_initialises_itself("model = DDP(net)")
    assert ddl_runtime.framework_of("", {"TF_CONFIG": "{}"}) == "tensorflow"
    assert ddl_runtime.framework_of("horovod", {}) == "mpi"


def test_lazy_strategy_creates_once_and_only_when_touched():
    made = []

    class Fake:
        num_replicas_in_sync = 2

    lazy = ddl_runtime.LazyStrategy(lambda: made.append(1) or Fake())
    assert made == [] and "not created" in repr(lazy)
    assert lazy.num_replicas_in_sync == 2 and isinstance(lazy, Fake)
    assert lazy.num_replicas_in_sync == 2 and made == [1]


def test_startup_strategy_only_when_the_cell_uses_ours_and_builds_none():
    repro = "import tensorflow as tf\ntf.constant(1.)\nstrategy.num_replicas_in_sync"
    own = "import tensorflow as tf\nstrategy = tf.distribute.MultiWorkerMirroredStrategy()\n"
    own_ps = "s = tf.distribute.ParameterServerStrategy(r)\nwith strategy.scope(): pass"
    at_startup = ddl_runtime.strategy_at_startup
    assert at_startup("tf-multi-worker-mirrored", repro)
    assert at_startup("tf-parameter-server", "with strategy.scope(): pass")
    assert not at_startup("tf-multi-worker-mirrored", own + "strategy.scope()")
    assert not at_startup("tf-parameter-server", own_ps)
    assert not at_startup("tf-multi-worker-mirrored", "import tensorflow as tf\nprint(1)")
    assert not at_startup("tf-mirrored", repro)  # MirroredStrategy may come later
    # a cell that does not parse falls back to a text scan for the constructor
    assert ddl_runtime.cell_builds_own_strategy("x = MultiWorkerMirroredStrategy( oops")


def test_plan_elastic_names_one_rendezvous_host():
    spec = JobSpec(name="e", strategy="torch-elastic", replicas={"Worker": 3})
    eps = contract.local_endpoints(spec, [11, 12, 13])
    out = launch.plan(
        spec, python="py", entry="main.py", hostfile="h", endpoints=eps, gpus={}, environ={}
    )
    assert [x.env["PET_RDZV_CONF"] for x in out] == ["is_host=true"] + ["is_host=false"] * 2
    assert {x.env["PET_RDZV_ENDPOINT"] for x in out} == {"127.0.0.1:11"}
    assert all(x.argv == ["py", "-m", "torch.distributed.run", "main.py"] for x in out)

    # the user's rendezvous settings are kept, with the host named beside them
    spec = JobSpec(
        name="e", strategy="torch-elastic", replicas={"Worker": 2},
        env={"PET_RDZV_CONF": "last_call_timeout=2"},
    )  # fmt: skip
    out = launch.plan(
        spec, python="py", entry="main.py", hostfile="h", endpoints=eps, gpus={}, environ={}
    )
    assert [x.env["PET_RDZV_CONF"] for x in out] == [
        "last_call_timeout=2,is_host=true",
        "last_call_timeout=2,is_host=false",
    ]
    assert launch.rdzv_conf("is_host=false,x=1", "worker-0") == "is_host=false,x=1"


def test_requirements_cache_key():
    assert cache_key(["b", "a"], sys.executable) == cache_key(["a", "b"], sys.executable)
    assert cache_key(["a"], sys.executable) != cache_key(["a"], "/other/python")
