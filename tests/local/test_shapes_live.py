"""What live replicas saw, for shapes the flags make: the process count, WORLD_SIZE,
ranks and TF_CONFIG the running processes report, and the GPUs each one was given
on a machine whose GPU inventory is a fake ``nvidia-smi`` on PATH."""

from __future__ import annotations

import json
import os
import re
import stat

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.errors import ResourceError
from jupyter_ddl.notebook.args import parse_line, spec_from_args
from tests.local.conftest import lines, wait
from tests.support import require

pytestmark = pytest.mark.slow

TORCH_CELL = """
import os
import torch, torch.distributed as dist
t = torch.ones(1)
if dist.is_initialized():
    dist.all_reduce(t)  # the sum over every process of the world
print(f"SAW rank={rank} world={world_size} env_world={os.environ.get('WORLD_SIZE', '-')} "
      f"init={dist.is_initialized()} sum={int(t.item())} "
      f"cuda_visible={os.environ.get('CUDA_VISIBLE_DEVICES', '-')} device={device}")
"""

_SAW = re.compile(
    r"SAW rank=(\d+) world=(\d+) env_world=(\S+) init=(\w+) sum=(\d+) cuda_visible=(\S*) "
)


def run(backend, flags: str, cell: str, timeout: float = 150):
    spec = spec_from_args(parse_line(flags), name=f"live-{os.urandom(3).hex()}", backend="local")
    backend.submit(spec, build_bundle(cell))
    status = wait(backend, spec.name, timeout=timeout)
    assert status.state.value == "Succeeded", status.message
    return spec, status


def saw(backend, name: str, replicas) -> list[tuple[str, ...]]:
    out = []
    for r in replicas:
        found = [m.groups() for t in lines(backend, name, r.id) if (m := _SAW.search(t))]
        assert found, (r.id, lines(backend, name, r.id)[-10:])
        out += found
    return sorted(out)


@pytest.mark.parametrize(
    ("flags", "replicas"),
    [
        ("--strategy torch-ddp --replicas 1", ["master-0"]),
        ("--strategy torch-ddp --workers 0", ["master-0"]),
        ("--strategy torch-ddp --replicas 3", ["master-0", "worker-0", "worker-1"]),
    ],
    ids=["replicas-1", "workers-0", "replicas-3"],
)
def test_torch_ddp_processes_see_the_world_the_flags_asked_for(backend, flags, replicas):
    require.module("torch")
    spec, status = run(backend, flags, TORCH_CELL)
    assert [r.id for r in status.replicas] == replicas
    n = len(replicas)
    got = saw(backend, spec.name, status.replicas)
    assert [g[0] for g in got] == [str(k) for k in range(n)]  # one process per rank
    assert {g[1:5] for g in got} == {(str(n), str(n), "True", str(n))}


def test_deepspeed_trainjob_ranks_are_the_launchers_mpirun_ranks(backend):
    # Trainer's deepspeed runtime is an MPI one whose launcher is one of the numNodes
    # hosts (runLauncherAsNode): it runs mpirun over itself and the node pods
    require.module("torch")
    require.executable("mpirun")
    spec, status = run(backend, "--strategy deepspeed --replicas 2 --target trainjob", TORCH_CELL)
    assert [r.id for r in status.replicas] == ["launcher-0", "node-0"]
    got = saw(backend, spec.name, status.replicas)  # each rank logs as its host
    assert [g[:5] for g in got] == [(str(k), "2", "2", "True", "2") for k in range(2)]
    # v2.3's hostfile lists the node job first: rank 0 on node-0, rank 1 on the launcher
    assert [g[0] for g in saw(backend, spec.name, status.replicas[1:])] == ["0"]


TF_CELL = """
import json, os
cfg = json.loads(os.environ["TF_CONFIG"])
print("TFSAW " + json.dumps({"cluster": {k: len(v) for k, v in cfg["cluster"].items()},
      "task": cfg["task"], "rank": rank, "world": world_size,
      "sync": strategy.num_replicas_in_sync}), flush=True)
"""


@pytest.mark.tensorflow
def test_multi_worker_mirrored_chief_counts_in_replicas(backend):
    require.module("tensorflow")
    spec, status = run(
        backend, "--strategy tf-multi-worker-mirrored --replicas 2 --chief 1", TF_CELL, 240
    )
    assert [r.id for r in status.replicas] == ["chief-0", "worker-0"]
    seen = []
    for r in status.replicas:
        text = next(t for t in lines(backend, spec.name, r.id) if t.startswith("TFSAW "))
        seen.append(json.loads(text[len("TFSAW ") :]))
    assert all(s["cluster"] == {"chief": 1, "worker": 1} for s in seen)
    assert sorted((s["task"]["type"], s["rank"]) for s in seen) == [("chief", 0), ("worker", 1)]
    assert {(s["world"], s["sync"]) for s in seen} == {(2, 2)}  # TF agrees: 2 in sync


# -- GPUs: a fake inventory at the process boundary ---------------------------------------
@pytest.fixture
def fake_gpus(tmp_path, monkeypatch):
    """Make this machine (and the supervisor it starts) report ``n`` GPUs."""

    def make(n: int) -> None:
        tool = tmp_path / "bin" / "nvidia-smi"
        tool.parent.mkdir(exist_ok=True)
        tool.write_text("#!/bin/sh\n" + "".join(f"echo {i}\n" for i in range(n)))
        tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)

    return make


def test_two_replicas_of_one_gpu_are_refused_on_a_one_gpu_machine(backend, fake_gpus):
    fake_gpus(1)
    spec = spec_from_args(
        parse_line("--strategy torch-ddp --replicas 2 --gpus 1"), name="two", backend="local"
    )
    with pytest.raises(ResourceError) as e:
        backend.submit(spec, build_bundle("x = 1"))
    text = str(e.value)
    assert "\n" not in text
    assert text.startswith("the job asks for 2 GPUs (1 per replica x 2: master-0, worker-0)")
    assert "this machine has 1 (GPU 0)" in text
    assert backend.list() == []  # nothing was started


@pytest.mark.parametrize("strategy", ["torch-ddp", "ignite", "deepspeed"])
def test_one_replica_of_one_gpu_runs_on_a_one_gpu_machine(backend, fake_gpus, strategy):
    require.module("torch")
    fake_gpus(1)
    spec, status = run(backend, f"--strategy {strategy} --replicas 1 --gpus 1", TORCH_CELL)
    assert [r.id for r in status.replicas] == ["master-0"]
    ((rank, world, env_world, _init, _sum, visible),) = saw(backend, spec.name, status.replicas)
    assert (rank, world, env_world, visible) == ("0", "1", "1", "0")


def test_torch_dp_sees_every_gpu_of_its_replica(backend, fake_gpus):
    require.module("torch")
    fake_gpus(4)
    spec, status = run(backend, "--strategy torch-dp --gpus 4", TORCH_CELL)
    ((*_, visible),) = saw(backend, spec.name, status.replicas)
    assert visible == "0,1,2,3"
