"""One resolved shape for every strategy and every shape the flags allow.

For each accepted ``%%distribute`` line, the counts must agree everywhere they show up:
the flags, the spec (and the spec read back from JSON), the manifests the operators get
(replicaSpecs / numNodes / mpiReplicaSpecs / mpirun -np), the processes the local
backend would start, and what every replica sees (WORLD_SIZE, RANK, PET_*, TF_CONFIG
as the shipped runtime reads it). Refused lines must be refused in one line.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_ddl.backends.local import gpus, launch
from jupyter_ddl.core import contract
from jupyter_ddl.core.strategies import CATALOG
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.manifests import build_manifests
from jupyter_ddl.models import JobSpec
from jupyter_ddl.notebook.args import DistributeArgs, parse_line, spec_from_args
from jupyter_ddl.runtime import ddl_runtime
from jupyter_ddl.validation import problems

_MAPS = {
    "TFJob": "tfReplicaSpecs",
    "PyTorchJob": "pytorchReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
}
_FLAGS = {"Worker": "workers", "PS": "ps", "Chief": "chief", "Evaluator": "evaluator"}


def spec_of(args: DistributeArgs) -> JobSpec | None:
    """The spec these flags make, or None when they are refused (in one line)."""
    try:
        spec = spec_from_args(args, name="job", backend="local")
    except ValidationError as e:
        assert "\n" not in str(e) and str(e), e
        return None
    found = problems(spec)
    if found:
        assert all("\n" not in p for p in found)
        return None
    return spec


def check(args: DistributeArgs) -> JobSpec | None:
    spec = spec_of(args)
    if spec is None:
        return None
    shape = spec.shape
    strategy = CATALOG[args.strategy or ""]
    trainjob = args.target == "trainjob"

    # -- the flags and the spec ----------------------------------------------------------
    assert dict(shape.counts) == (
        {r: n for r, n in spec.replicas.items() if n} if not trainjob else dict(shape.counts)
    )
    if args.replicas is not None:
        trained = (
            shape.num_nodes  # an MPI runtime's launcher is one of them (operator-contract.md §4.3)
            if trainjob
            else sum(shape.count(r.role) for r in strategy.counted_roles)
        )
        assert trained == args.replicas
    for role, flag in _FLAGS.items():
        given = getattr(args, flag)
        if given is not None and not trainjob:
            assert shape.count(role) == given  # --workers 0 stays 0
    again = JobSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert again.shape == shape

    # -- the manifests --------------------------------------------------------------------
    job = build_manifests(spec, image="img", command=["python", "/code/main.py"])[0]
    assert job["kind"] == shape.kind
    if shape.kind == "TrainJob":
        trainer = job["spec"]["trainer"]
        assert trainer["numNodes"] == shape.num_nodes
        assert trainer["numProcPerNode"] == shape.nproc_per_node
        if shape.trainjob_mpi:
            assert _np(trainer["command"]) == shape.world_size
        else:
            assert shape.num_nodes * shape.nproc_per_node == shape.world_size
    else:
        specs = job["spec"][_MAPS[shape.kind]]
        assert {r: s["replicas"] for r, s in specs.items()} == dict(shape.counts)
    if shape.kind == "PyTorchJob":
        assert job["spec"]["nprocPerNode"] == str(shape.nproc_per_node)
    if shape.kind == "MPIJob":
        launcher = specs["Launcher"]["template"]["spec"]["containers"][0]
        assert _np(launcher["command"]) == shape.world_size == shape.count("Worker")

    # -- the local processes and what each one sees ---------------------------------------
    ids = contract.replica_ids(spec)
    eps = contract.local_endpoints(spec, [20000 + k for k in range(len(ids))])
    inventory = [str(g) for g in range(sum(n for _, n in shape.gpu_requests()))]
    split = gpus.assign_gpus(shape.gpu_requests(), inventory)
    plans = launch.plan(
        spec, python="py", entry="m.py", hostfile="/h", endpoints=eps, gpus=split, environ={}
    )
    assert [(p.role, p.index) for p in plans] == ids == shape.replica_ids
    for p, r in zip(plans, shape.replicas, strict=True):
        if p.argv is not None and p.role != "Launcher":
            seen = [g for g in p.env["CUDA_VISIBLE_DEVICES"].split(",") if g]
            assert len(seen) == r.gpus  # torch-dp too: every GPU of its replica
    _check_world(shape, plans)
    return spec


def _np(argv: list[str]) -> int:
    flag = "-np" if "-np" in argv else "-n"
    return int(argv[argv.index(flag) + 1])


def _check_world(shape, plans) -> None:
    """The world size every replica sees, as its launcher or runtime computes it."""
    running = [p for p in plans if p.argv is not None]
    if shape.mpi_hosts is not None:  # MPIJob, MPI TrainJob: one mpirun runs every rank
        (launcher,) = running
        assert _np(launcher.argv) == shape.world_size
        hosts = shape.num_nodes if shape.num_nodes is not None else len(shape.mpi_host_ids)
        assert shape.world_size == hosts * shape.mpi_slots
        return
    if shape.kind == "TFJob":
        training = []
        for p in running:
            topo = ddl_runtime.tf_topology(p.env.get("TF_CONFIG", ""))
            cluster = json.loads(p.env["TF_CONFIG"])["cluster"] if "TF_CONFIG" in p.env else {}
            assert {k: len(v) for k, v in cluster.items()} == (
                {r.lower(): n for r, n in shape.counts.items()} if len(running) > 1 else {}
            )
            assert topo["world_size"] == shape.world_size
            if topo["rank"] >= 0:
                training.append(topo["rank"])
        assert sorted(training) == list(range(shape.world_size))
        return
    torchrun = {p.argv[1:3] == ["-m", "torch.distributed.run"] for p in running}
    assert torchrun == {shape.torchrun}
    for p in running:
        assert int(p.env["PET_NPROC_PER_NODE"]) == shape.nproc_per_node
        nnodes = p.env["PET_NNODES"]
        if shape.elastic_bounds is not None:
            lo, hi = shape.elastic_bounds
            assert nnodes == f"{lo}:{hi}" and len(running) == shape.count("Worker")
            continue
        # torchrun: WORLD_SIZE = nnodes x nproc; one process per replica: the operator's
        assert (
            int(nnodes) * shape.nproc_per_node
            == shape.world_size
            == len(running) * int(p.env["PET_NPROC_PER_NODE"])
        )
        if "WORLD_SIZE" in p.env:
            assert int(p.env["WORLD_SIZE"]) == shape.world_size
    ranks = sorted(int(p.env.get("RANK", p.env.get("PET_NODE_RANK", -1))) for p in running)
    if shape.elastic_bounds is None:
        assert ranks == list(range(len(running)))


def _count(limit: int) -> st.SearchStrategy[int | None]:
    return st.none() | st.integers(0, limit)


@st.composite
def flag_sets(draw) -> DistributeArgs:
    name = draw(st.sampled_from(sorted(CATALOG)))
    s = CATALOG[name]
    args = DistributeArgs(strategy=name, replicas=draw(_count(5)), gpus=draw(st.integers(0, 2)))
    for rule in s.roles:
        flag = _FLAGS.get(rule.role)
        if flag:
            setattr(args, flag, draw(_count(4 if rule.role in ("Worker", "PS") else 1)))
    if s.framework == "pytorch" and name != "torch-dp":
        args.nproc_per_node = draw(st.none() | st.integers(1, 3))
    if s.trainjob_runtime:
        args.target = draw(st.sampled_from([None, "trainjob"]))
    if s.needs_tpu:
        args.tpus = 4
    return args


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flag_sets())
def test_every_accepted_shape_agrees_everywhere(args):
    check(args)


EDGES = [
    ("--strategy torch-ddp --replicas 1", {"Master": 1}, 1),
    ("--strategy ignite --replicas 1 --gpus 1", {"Master": 1}, 1),
    ("--strategy deepspeed --replicas 1 --gpus 1", {"Master": 1}, 1),
    ("--strategy torch-ddp --workers 0", {"Master": 1}, 1),
    ("--strategy torch-ddp --replicas 3", {"Master": 1, "Worker": 2}, 3),
    ("--strategy torch-ddp --replicas 2 --gpus 4", {"Master": 1, "Worker": 1}, 8),
    ("--strategy torch-ddp --replicas 2 --nproc-per-node 3", {"Master": 1, "Worker": 1}, 6),
    ("--strategy torch-dp --gpus 4", {"Master": 1}, 1),
    ("--strategy torch-elastic --replicas 3", {"Worker": 3}, 3),
    ("--strategy tf-multi-worker-mirrored --replicas 3", {"Worker": 3}, 3),
    ("--strategy tf-multi-worker-mirrored --replicas 3 --chief 1 --evaluator 1",
     {"Chief": 1, "Worker": 2, "Evaluator": 1}, 3),
    ("--strategy tf-parameter-server --replicas 3 --ps 2 --evaluator 1",
     {"Chief": 1, "Worker": 3, "PS": 2, "Evaluator": 1}, 4),
    ("--strategy tf-mirrored --gpus 2", {"Worker": 1}, 1),
    ("--strategy horovod --replicas 3 --gpus 1", {"Worker": 3, "Launcher": 1}, 3),
    ("--strategy torch-ddp --replicas 3 --target trainjob", {"Node": 3}, 3),
    ("--strategy torch-elastic --replicas 2 --target trainjob --gpus 2", {"Node": 2}, 4),
    ("--strategy deepspeed --replicas 2 --target trainjob --gpus 2", {"Launcher": 1, "Node": 1}, 4),
    ("--strategy deepspeed --replicas 3 --target trainjob", {"Launcher": 1, "Node": 2}, 3),
]  # fmt: skip


@pytest.mark.parametrize(("flags", "counts", "world"), EDGES, ids=[e[0][11:] for e in EDGES])
def test_edge_shapes(flags, counts, world):
    spec = check(parse_line(flags))
    assert spec is not None, problems(spec_from_args(parse_line(flags), name="j", backend="local"))
    assert dict(spec.shape.counts) == counts and spec.shape.world_size == world


@pytest.mark.parametrize(
    "flags",
    [
        "--strategy torch-ddp --replicas 3 --workers 5",
        "--strategy torch-dp --replicas 2",
        "--strategy tf-mirrored --replicas 2",
        "--strategy tf-parameter-server --replicas 2 --workers 3",
        "--strategy torch-ddp --replicas 1 --gpus 1 --nproc-per-node 2",  # NCCL: a GPU each
    ],
)
def test_conflicting_flags_are_refused_in_one_line(flags):
    assert check(parse_line(flags)) is None


def test_a_spec_names_every_role_so_no_default_comes_back():
    spec = spec_from_args(parse_line("--strategy torch-ddp --replicas 1"), name="j", backend="l")
    assert spec.replicas == {"Master": 1, "Worker": 0}
    assert JobSpec.from_dict(spec.to_dict()).shape.world_size == 1
    # a spec built by hand still takes the strategy's default for a role it leaves out
    assert JobSpec("j", "torch-ddp", {"Master": 1}).replicas == {"Master": 1, "Worker": 1}


def test_a_spec_is_frozen_and_replace_resolves_anew():
    import dataclasses

    spec = JobSpec("j", "torch-ddp")
    assert spec.shape.world_size == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.replicas = {"Worker": 3}  # type: ignore[misc]
    more = dataclasses.replace(spec, replicas={"Worker": 3})
    assert more.shape.world_size == 4 and more.replicas == {"Master": 1, "Worker": 3}
    assert spec.shape.world_size == 2  # the first spec is untouched
    assert dataclasses.replace(more, nproc_per_node=2).shape.world_size == 8
    assert dataclasses.replace(more, target="TrainJob").shape.counts == {"Node": 4}


def test_unresolvable_specs_raise_one_line():
    with pytest.raises(ValidationError, match="unknown strategy 'nope'"):
        JobSpec("j", "nope").shape  # noqa: B018
    with pytest.raises(ValidationError, match=r"replicas.Worker: -1 is negative"):
        JobSpec("j", "torch-ddp", {"Worker": -1}).shape  # noqa: B018
