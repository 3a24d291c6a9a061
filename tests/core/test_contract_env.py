"""Replica environments against docs/operator-contract.md (each test names its section)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from jupyter_ddl.core import contract
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.models import JobSpec, Resources
from tests.support import require

NS = "team-a"


def env_of(spec: JobSpec, role: str, index: int, ns: str = NS) -> dict[str, str]:
    return contract.replica_env(spec, role, index, contract.cluster_endpoints(spec, ns))


# -- §2.1 TFJob ------------------------------------------------------------------------
def test_s2_1_tf_config_matches_the_contract_example_byte_for_byte():
    spec = JobSpec("mnist", "tf-parameter-server", {"Chief": 1, "Worker": 2, "PS": 1})
    expected = (
        '{"cluster":{"chief":["mnist-chief-0.team-a.svc:2222"],"ps":["mnist-ps-0.team-a.svc:2222"],'
        '"worker":["mnist-worker-0.team-a.svc:2222","mnist-worker-1.team-a.svc:2222"]},'
        '"task":{"type":"worker","index":1},"environment":"cloud"}'
    )
    assert env_of(spec, "Worker", 1) == {"TF_CONFIG": expected}  # and nothing else (§1.9)


def test_s2_1_task_of_every_replica():
    spec = JobSpec("mnist", "tf-parameter-server", {"Chief": 1, "Worker": 2, "PS": 2})
    for role, index in contract.replica_ids(spec):
        task = json.loads(env_of(spec, role, index)["TF_CONFIG"])["task"]
        assert task == {"type": role.lower(), "index": index}


def test_s2_1_single_replica_gets_no_tf_config():
    assert env_of(JobSpec("one", "tf-mirrored"), "Worker", 0) == {}


def test_s10_3_evaluator_is_in_the_cluster_map_and_gets_tf_config():
    spec = JobSpec("ev", "tf-multi-worker-mirrored", {"Worker": 2, "Evaluator": 1})
    cfg = json.loads(env_of(spec, "Evaluator", 0)["TF_CONFIG"])
    assert cfg["cluster"]["evaluator"] == ["ev-evaluator-0.team-a.svc:2222"]
    assert cfg["task"] == {"type": "evaluator", "index": 0}
    assert list(cfg["cluster"]) == ["evaluator", "worker"]  # Go sorts map keys


# -- §2.2 PyTorchJob ---------------------------------------------------------------------
def test_s2_2_pytorch_env_matches_the_contract_example():
    spec = JobSpec("mnist", "torch-ddp", {"Master": 1, "Worker": 2})
    assert env_of(spec, "Worker", 1) == {
        "PYTHONUNBUFFERED": "1",
        "PET_NPROC_PER_NODE": "1",  # we always write nprocPerNode explicitly
        "PET_NNODES": "3",
        "MASTER_PORT": "23456",
        "PET_MASTER_PORT": "23456",
        "MASTER_ADDR": "mnist-master-0",  # short Service name, no namespace
        "PET_MASTER_ADDR": "mnist-master-0",
        "WORLD_SIZE": "3",
        "RANK": "2",  # worker i -> i + 1
        "PET_NODE_RANK": "2",
    }
    assert env_of(spec, "Master", 0)["RANK"] == "0"


def test_s2_2_world_size_counts_processes_but_rank_stays_node_level():
    spec = JobSpec("m", "torch-ddp", {"Worker": 1}, nproc_per_node=4)
    env = env_of(spec, "Worker", 0)
    assert (env["WORLD_SIZE"], env["RANK"], env["PET_NPROC_PER_NODE"]) == ("8", "1", "4")


def test_s2_2_more_than_one_gpu_means_one_process_per_gpu():
    spec = JobSpec("m", "torch-ddp", {"Worker": 1}, default_resources=Resources(gpu=2))
    assert env_of(spec, "Master", 0)["PET_NPROC_PER_NODE"] == "2"
    dp = JobSpec("m", "torch-dp", default_resources=Resources(gpu=4))
    assert env_of(dp, "Master", 0)["PET_NPROC_PER_NODE"] == "1"  # DataParallel: one process


def test_s2_2_elastic_form():
    spec = JobSpec(
        "el",
        "torch-elastic",
        {"Worker": 3},
        backend_options={"elastic_min_replicas": 2, "elastic_max_replicas": 4},
    )
    env = env_of(spec, "Worker", 2)
    assert env == {
        "PYTHONUNBUFFERED": "1",
        "PET_NPROC_PER_NODE": "1",
        "PET_RDZV_ENDPOINT": "el-worker-0:23456",
        "PET_RDZV_BACKEND": "c10d",
        "PET_NNODES": "2:4",
    }
    assert "MASTER_ADDR" not in env and "RANK" not in env


def test_s10_2_pytorchjob_without_master_gets_no_rendezvous_variables():
    spec = JobSpec(
        "nm", "torch-ddp", {"Master": 0, "Worker": 2}
    )  # not valid for us, but what the operator does
    env = env_of(spec, "Worker", 1)
    assert env == {"PYTHONUNBUFFERED": "1", "PET_NPROC_PER_NODE": "1", "PET_NNODES": "2"}


# -- §3.3 MPIJob v2beta1 --------------------------------------------------------------------
def test_s3_3_launcher_and_worker_env():
    spec = JobSpec("pi", "horovod", {"Worker": 2}, slots_per_worker=2)
    ep = contract.cluster_endpoints(spec, "default")
    assert contract.replica_env(spec, "Launcher", 0, ep) == {
        "K_MPI_JOB_ROLE": "launcher",
        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
        "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
        "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
        "OMPI_MCA_orte_set_default_slots": "2",
        "NVIDIA_VISIBLE_DEVICES": "",
        "NVIDIA_DRIVER_CAPABILITIES": "",
    }
    assert contract.replica_env(spec, "Worker", 1, ep) == {"K_MPI_JOB_ROLE": "worker"}


def test_s3_3_hostfile_matches_the_contract_example():
    spec = JobSpec("pi", "horovod", {"Worker": 2})
    ep = contract.cluster_endpoints(spec, "default")
    assert contract.mpi_hostfile(spec, ep) == (
        "pi-worker-0.pi.default.svc slots=1\npi-worker-1.pi.default.svc slots=1\n"
    )
    assert ep.host("launcher-0") == "pi-launcher.pi.default.svc"


def test_s7_local_hostfile_is_one_localhost_line_with_every_slot():
    spec = JobSpec("pi", "horovod", {"Worker": 3}, slots_per_worker=2)
    ep = contract.local_endpoints(spec, [7000, 7001, 7002, 7003])
    assert contract.mpi_hostfile(spec, ep, local=True) == "localhost slots=6\n"


# -- §4.3 TrainJob ---------------------------------------------------------------------------
def test_s4_3_trainjob_torch_env():
    spec = JobSpec("demo", "torch-ddp", {"Worker": 2}, target="TrainJob")  # 1 + 2 -> 3 nodes
    assert contract.replica_ids(spec) == [("Node", 0), ("Node", 1), ("Node", 2)]
    assert env_of(spec, "Node", 2) == {
        "PET_NNODES": "3",
        "PET_NPROC_PER_NODE": "1",
        "PET_NODE_RANK": "2",
        "PET_MASTER_ADDR": "demo-node-0-0.demo",
        "PET_MASTER_PORT": "29500",
    }  # no RANK/WORLD_SIZE/PYTHONUNBUFFERED: torchrun is expected


def test_s4_3_trainjob_mpi_runtime_env_goes_to_the_launcher_only():
    # deepspeed-distributed runs the launcher as one of numNodes hosts (runLauncherAsNode,
    # §4.3, §10.19): numNodes 3 is the launcher and 2 node pods, all three in the hostfile
    spec = JobSpec("ds", "deepspeed", {"Node": 3}, target="TrainJob")
    ep = contract.cluster_endpoints(spec)
    assert contract.replica_ids(spec) == [("Launcher", 0), ("Node", 0), ("Node", 1)]
    assert spec.shape.num_nodes == 3 and spec.shape.world_size == 3
    assert contract.replica_env(spec, "Launcher", 0, ep)["OMPI_MCA_orte_set_default_slots"] == "1"
    assert contract.replica_env(spec, "Node", 1, ep) == {}
    # v2.3 lists the node job before the launcher; the hostfile follows that order
    assert contract.mpi_hostfile(spec, ep) == (
        "ds-node-0-0.ds slots=1\nds-node-0-1.ds slots=1\nds-launcher-0-0.ds slots=1\n"
    )
    v22 = JobSpec("ds", "deepspeed", {"Node": 3}, target="TrainJob",
                  backend_options={"trainer_release": "v2.2.0"})  # fmt: skip
    assert contract.mpi_hostfile(v22, ep) == (
        "ds-launcher-0-0.ds slots=1\nds-node-0-0.ds slots=1\nds-node-0-1.ds slots=1\n"
    )
    # numNodes 1 still runs one node pod (max(numNodes - 1, 1), mpi.go); one rank
    one = JobSpec("ds", "deepspeed", {"Node": 1}, target="TrainJob")
    assert one.shape.replica_ids == [("Launcher", 0), ("Node", 0)] and one.shape.world_size == 1


# -- §7 local substitution ---------------------------------------------------------------------
def test_s7_local_endpoints_put_loopback_and_given_ports_in_replica_order():
    spec = JobSpec("loc", "tf-parameter-server", {"Worker": 2})
    ep = contract.local_endpoints(spec, [5001, 5002, 5003, 5004])
    assert ep.addresses == {
        "chief-0": ("127.0.0.1", 5001),
        "worker-0": ("127.0.0.1", 5002),
        "worker-1": ("127.0.0.1", 5003),
        "ps-0": ("127.0.0.1", 5004),
    }
    cfg = json.loads(contract.replica_env(spec, "PS", 0, ep)["TF_CONFIG"])
    assert cfg["cluster"]["ps"] == ["127.0.0.1:5004"]
    torch = JobSpec("loc", "torch-ddp", {"Worker": 1})
    env = contract.replica_env(torch, "Worker", 0, contract.local_endpoints(torch, [6000, 6001]))
    assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("127.0.0.1", "6000")


def test_no_local_only_variables_are_added():
    for spec in (
        JobSpec("a", "torch-ddp"),
        JobSpec("b", "horovod"),
        JobSpec("c", "tf-multi-worker-mirrored"),
    ):
        for role, i in contract.replica_ids(spec):
            assert "CUDA_VISIBLE_DEVICES" not in env_of(spec, role, i)


def test_bad_calls_raise_one_line_errors():
    spec = JobSpec("x", "torch-ddp")
    with pytest.raises(ValidationError, match="has no Worker 5; replicas: master-0, worker-0"):
        env_of(spec, "Worker", 5)
    with pytest.raises(ValidationError, match="2 replicas need 2 ports, got 1"):
        contract.local_endpoints(spec, [1])
    with pytest.raises(ValidationError, match="no address for replica 'master-0'"):
        contract.replica_env(spec, "Worker", 0, contract.Endpoints({}))


def test_job_kind():
    assert JobSpec("a", "horovod").shape.kind == "MPIJob"
    assert JobSpec("a", "ignite").shape.kind == "PyTorchJob"
    assert JobSpec("a", "ignite", target="TrainJob").shape.kind == "TrainJob"
    assert JobSpec("a", "tf-tpu").shape.kind == "TFJob"


# -- the real consumers read our variables as intended ---------------------------------------
def _run(code: str, env: dict[str, str]) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("PET_", "TF_CONFIG"))}
    full.update(env, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_s2_2_torchrun_takes_its_defaults_from_our_pet_variables():
    require.module("torch")
    spec = JobSpec("mnist", "torch-ddp", {"Worker": 2}, nproc_per_node=2)
    code = (
        "from torch.distributed.run import get_args_parser as p;"
        "a = p().parse_args(['x.py']);"
        "print(a.nnodes, a.nproc_per_node, a.node_rank, a.master_addr, a.master_port)"
    )
    assert _run(code, env_of(spec, "Worker", 1)) == "3 2 2 mnist-master-0 23456"


@pytest.mark.slow
@pytest.mark.tensorflow
def test_s2_1_tensorflow_parses_our_tf_config():
    require.module("tensorflow")
    spec = JobSpec("mnist", "tf-parameter-server", {"Worker": 2})
    code = (
        "import tensorflow as tf;"
        "r = tf.distribute.cluster_resolver.TFConfigClusterResolver();"
        "print(r.task_type, r.task_id, sorted(r.cluster_spec().as_dict().items()))"
    )
    out = _run(code, env_of(spec, "Worker", 1))
    assert out.startswith("worker 1 [('chief', ['mnist-chief-0.team-a.svc:2222']), ('ps', [")
    assert "'mnist-worker-1.team-a.svc:2222'" in out
