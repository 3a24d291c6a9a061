"""A JobSpec resolved once: its strategy, every role's final count and what follows.

``fill_counts`` is the one place where a role the spec does not name gets the
strategy's default (an explicit 0 stays 0); ``resolve`` derives the rest from the
filled counts: job kind, processes per replica, world size, replica ids in order and
the rank of each. ``JobSpec.shape`` caches the result, and the contract, the manifests,
validation, the dry run and both backends read it instead of merging defaults again.
Pure, no I/O. Section numbers refer to ``docs/operator-contract.md``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from jupyter_ddl.core import kinds
from jupyter_ddl.core.kinds import ROLES, Kind, replica_id
from jupyter_ddl.core.placement import Resources
from jupyter_ddl.core.strategies import CATALOG, Strategy, get_strategy
from jupyter_ddl.core.trainer import RELEASES, RuntimeLayout, shipped_layout
from jupyter_ddl.errors import ValidationError

#: backend_options keys the Kubernetes backend fills at submit from what the cluster
#: runs (the dry run from config): the Trainer release, and the runtime's layout
TRAINER_RELEASE_OPTION = "trainer_release"
TRAINER_RUNTIME_OPTION = "trainer_runtime"


class SpecFields(Protocol):
    """The fields of ``jupyter_ddl.core.spec.JobSpec`` a shape is resolved from. Named here,
    not imported: the spec builds on this module (``JobSpec.shape``), and a dependency
    that points one way keeps the two free of an import cycle."""

    @property
    def strategy(self) -> str: ...
    @property
    def replicas(self) -> Mapping[str, Any]: ...
    @property
    def target(self) -> str | None: ...
    @property
    def runtime_ref(self) -> str | None: ...
    @property
    def nproc_per_node(self) -> int | None: ...
    @property
    def slots_per_worker(self) -> int: ...
    @property
    def backend_options(self) -> Mapping[str, Any]: ...
    def resources_for(self, role: str) -> Resources: ...


class Shaped(Protocol):
    """A spec that resolves and keeps its own shape (``jupyter_ddl.core.spec.JobSpec``)."""

    @property
    def shape(self) -> JobShape: ...


def is_trainjob(spec: SpecFields) -> bool:
    """Does ``spec`` target Trainer v2 (``target`` names the TrainJob kind)?"""
    return spec.target == kinds.TRAINJOB.name


rid = replica_id  # the name the contract and the launchers use


@dataclass(frozen=True)
class Replica:
    """One replica of a resolved job."""

    role: str
    index: int
    rank: int | None  # node rank (RANK / PET_NODE_RANK, TF chief/worker order, MPI host);
    # None for replicas outside the collective (PS, evaluator, launcher) and elastic ones
    gpus: int

    @property
    def rid(self) -> str:
        return rid(self.role, self.index)


@dataclass(frozen=True)
class JobShape:
    """What a spec resolves to. ``counts`` lists only roles with replicas."""

    strategy: Strategy
    job_kind: Kind  # the Kubeflow kind (a TrainJob's carries its Trainer release)
    counts: Mapping[str, int]
    resources: Mapping[str, Resources]  # per role of ``counts``
    nproc_per_node: int  # training processes per replica (torchrun when > 1)
    world_size: int  # processes that join the collective
    replicas: tuple[Replica, ...]
    runtime: RuntimeLayout | None  # a TrainJob's runtime
    num_nodes: int | None  # a TrainJob's numNodes (MPI: the launcher may be one of them)
    elastic_bounds: tuple[int, int] | None  # (minReplicas, maxReplicas)
    mpi_slots: int  # ranks per MPI host (slotsPerWorker, or numProcPerNode for TrainJob)
    mpi_host_ids: tuple[str, ...]  # replica ids of mpirun's hosts, in hostfile order

    @property
    def kind(self) -> str:
        return self.job_kind.name

    @property
    def trainjob_runtime(self) -> str | None:
        return self.runtime.name if self.runtime is not None else None

    @property
    def replica_ids(self) -> list[tuple[str, int]]:
        return [(r.role, r.index) for r in self.replicas]

    @property
    def total(self) -> int:
        """Replicas (pods, local process groups) of every role."""
        return len(self.replicas)

    def count(self, role: str) -> int:
        return self.counts.get(role, 0)

    @property
    def trainjob_mpi(self) -> bool:
        return self.runtime is not None and self.runtime.mpi

    @property
    def mpi_hosts(self) -> str | None:
        """The role whose replicas have no process of their own when a launcher runs
        mpirun: their ranks are the launcher's (the launcher may be a host too,
        ``mpi_host_ids``)."""
        if self.job_kind is kinds.MPIJOB:
            return "Worker"
        return "Node" if self.trainjob_mpi else None

    @property
    def torchrun(self) -> bool:
        """Does each replica run its processes under torchrun (nprocPerNode > 1, elastic
        rendezvous, or a TrainJob, where Trainer injects only PET_* (§4.3))?"""
        s = self.strategy
        return (
            s.framework == "pytorch"
            and self.mpi_hosts is None
            and (s.launcher == "torchrun" or self.nproc_per_node > 1 or self.runtime is not None)
        )

    def gpu_requests(self) -> list[tuple[str, int]]:
        """(replica id, GPUs) for every replica, in replica order."""
        return [(r.rid, r.gpus) for r in self.replicas]

    def describe(self) -> str:
        """``Master 1 + Worker 2``: the roles and counts, as the form and dry run show them."""
        return " + ".join(f"{role} {n}" for role, n in self.counts.items()) or "no replicas"


def count_problems(strategy: Strategy, replicas: Mapping[str, Any], trainjob: bool) -> list[str]:
    """Every problem of a spec's counts against ``strategy``'s role rules, one line each."""
    huge = too_many(replicas)
    if huge:
        return [huge]
    out = []
    for role, n in replicas.items():
        rule = strategy.rule(role)
        bad = _not_a_count(role, n)
        if bad:
            out.append(bad)
        elif role == "Node" and trainjob:
            if n < 1:
                out.append("replicas.Node: a TrainJob needs at least 1 node; set Node to 1 or more")
        elif rule is None:
            out.append(
                f"replicas.{role}: {strategy.name} has no {role} role; "
                f"use only {', '.join(strategy.role_names)}"
            )
        elif not rule.allows(n):
            out.append(
                f"replicas.{role}: {strategy.name} needs {rule.describe()} {role}, got {n}; "
                f"set {role} to {rule.default if rule.allows(rule.default) else rule.min}"
            )
    return out


#: the most replicas one role may have, and one job in all. Checked before anything
#: works per replica (names, placement and the shape are per-replica work, some of it
#: quadratic), so an absurd count is refused at once instead of hanging the kernel.
MAX_REPLICAS = 1000


def too_many(replicas: Mapping[str, Any]) -> str | None:
    """One line when a count, or all of them together, is above ``MAX_REPLICAS``."""
    counts = {r: n for r, n in replicas.items() if isinstance(n, int) and not isinstance(n, bool)}
    for role, n in counts.items():
        if n > MAX_REPLICAS:
            return f"replicas.{role}: {short_count(n)} is above the limit of {MAX_REPLICAS}; give fewer"
    total = sum(n for n in counts.values() if n > 0)
    if total > MAX_REPLICAS:
        return f"replicas: {short_count(total)} in all is above the limit of {MAX_REPLICAS}; give fewer"
    return None


def short_count(n: int) -> str:
    """A count as written, or its digit count when it is absurdly long."""
    return str(n) if n < 10**12 else f"a {len(str(n))}-digit count"


def _not_a_count(role: str, n: Any) -> str | None:
    if not isinstance(n, int) or isinstance(n, bool):
        return f"replicas.{role}: {n!r} is not a whole number; give a count such as 2"
    if n < 0:
        return f"replicas.{role}: {n} is negative; give a count of at least 0"
    return None


def try_resolve(spec: Shaped) -> JobShape | None:
    """``spec.shape``, or None when the spec cannot be resolved (validation says why)."""
    try:
        return spec.shape
    except ValidationError:
        return None


def fill_counts(
    strategy_name: str, replicas: Mapping[str, Any], target: str | None
) -> dict[str, Any]:
    """The spec's counts with the strategy's default for every role it does not name.

    A TrainJob that names its ``Node`` count takes it as given. An unknown strategy
    leaves the counts as they are (validation reports it).
    """
    strategy = CATALOG.get(strategy_name)
    if strategy is None or (target == kinds.TRAINJOB.name and "Node" in replicas):
        return dict(replicas)
    return {**strategy.default_replicas(), **replicas}


def resolve(spec: SpecFields) -> JobShape:
    """Resolve ``spec``. Raises ValidationError when its strategy is unknown or a count is
    not a whole number ≥ 0; role rules (min/max) are validation's, so a shape exists for
    any spec the operators would accept."""
    strategy = get_strategy(spec.strategy)
    given = fill_counts(spec.strategy, spec.replicas, spec.target)
    bad = [p for role, n in given.items() if (p := _not_a_count(role, n))]
    if bad:
        raise ValidationError(bad)
    job_kind: Kind = strategy.kind
    runtime = num_nodes = None
    if is_trainjob(spec):
        job_kind = kinds.TRAINJOB.for_release(trainer_release(spec))
        runtime = trainer_runtime(spec, strategy, job_kind)
        num_nodes = given.get("Node")
        if num_nodes is None:
            num_nodes = sum(n for r, n in given.items() if r != "Node")
        given = _trainjob_counts(runtime, num_nodes)
    counts = {role: given[role] for role in _ordered(given) if given[role] > 0}
    resources = {role: dataclasses.replace(spec.resources_for(role)) for role in counts}
    if runtime is not None and "Launcher" in resources and not runtime.launcher_as_node:
        resources["Launcher"] = dataclasses.replace(resources["Launcher"], gpu=0, tpu=0)
    nproc = _nproc_per_node(spec, strategy, resources)
    if runtime is not None:
        slots = nproc
    else:
        slots = spec.slots_per_worker if job_kind is kinds.MPIJOB else 1
    hosts = _mpi_host_ids(job_kind, runtime, counts)
    ranks = _ranks(job_kind, strategy, runtime, counts, hosts, num_nodes)
    replicas = tuple(
        Replica(role, i, ranks.get((role, i)), resources[role].gpu)
        for role, n in counts.items()
        for i in range(n)
    )
    nodes = (
        num_nodes if num_nodes is not None else sum(counts.get(r, 0) for r in job_kind.rank_roles)
    )
    return JobShape(
        strategy=strategy,
        job_kind=job_kind,
        counts=counts,
        resources=resources,
        nproc_per_node=nproc,
        world_size=nodes * (slots if job_kind is kinds.MPIJOB else nproc),
        replicas=replicas,
        runtime=runtime,
        num_nodes=num_nodes,
        elastic_bounds=_elastic_bounds(spec, counts)
        if strategy.elastic and runtime is None
        else None,
        mpi_slots=slots,
        mpi_host_ids=hosts,
    )


def trainer_release(spec: SpecFields) -> str | None:
    """The Trainer release a TrainJob is written for: what the backend found on the
    cluster (or the dry run's config), else the newest; an unknown name (validation
    reports it) counts as unset."""
    name = spec.backend_options.get(TRAINER_RELEASE_OPTION)
    return name if name in RELEASES else None


def trainer_runtime(spec: SpecFields, strategy: Strategy, job_kind: Kind) -> RuntimeLayout:
    """The runtime's layout: as read from the cluster at submit, else as Trainer ships it."""
    name = spec.runtime_ref or strategy.trainjob_runtime or "torch-distributed"
    stored = spec.backend_options.get(TRAINER_RUNTIME_OPTION)
    if isinstance(stored, Mapping) and stored.get("name") == name:
        try:
            return RuntimeLayout.from_dict(stored)
        except (KeyError, TypeError, ValueError):
            pass  # not ours to trust: fall back to what Trainer ships
    assert isinstance(job_kind, kinds.TrainJobKind)
    return shipped_layout(name, job_kind.release)


def _trainjob_counts(runtime: RuntimeLayout, num_nodes: int) -> dict[str, int]:
    """Pods per role: one per node for torch; an MPI runtime adds its launcher, which
    is one of the ``numNodes`` hosts when it runs as a node (§4.3, §10.19)."""
    if not runtime.mpi:
        return {"Node": num_nodes}
    nodes = runtime.node_pods(num_nodes) if num_nodes > 0 else 0
    return {"Launcher": 1, "Node": nodes} if "launcher" in runtime.jobs else {"Node": nodes}


def _mpi_host_ids(
    job_kind: Kind, runtime: RuntimeLayout | None, counts: Mapping[str, int]
) -> tuple[str, ...]:
    if runtime is not None and runtime.mpi:
        role_of = {"launcher": "Launcher", "node": "Node"}
        return tuple(
            rid(role_of[j], i) for j in runtime.hosts for i in range(counts.get(role_of[j], 0))
        )
    if job_kind is kinds.MPIJOB:
        return tuple(rid("Worker", i) for i in range(counts.get("Worker", 0)))
    return ()


def _ordered(roles: Mapping[str, int]) -> list[str]:
    known = [r for r in ROLES if r in roles]
    return known + sorted(r for r in roles if r not in ROLES)


def _nproc_per_node(
    spec: SpecFields, strategy: Strategy, resources: Mapping[str, Resources]
) -> int:
    """Processes per replica: torch strategies run one per GPU (or ``nproc_per_node``);
    ``torch-dp`` drives every GPU from one process; TF and MPI ranks are one per replica."""
    if not strategy.process_per_gpu:
        return 1
    n = spec.nproc_per_node
    if isinstance(n, int) and not isinstance(n, bool) and n >= 1:
        return n
    gpus = max((res.gpu for res in resources.values()), default=0)
    return gpus if gpus > 1 else 1


def _ranks(
    job_kind: Kind,
    strategy: Strategy,
    runtime: RuntimeLayout | None,
    counts: Mapping[str, int],
    hosts: tuple[str, ...],
    num_nodes: int | None,
) -> dict[tuple[str, int], int]:
    """Each training replica's node rank, as the operator or the runtime numbers them:
    MPI hosts in hostfile order (a TrainJob's first ``numNodes`` of them), else the
    kind's roles in order (RANK: Worker i -> i + masters, §2.2; chief first in TF_CONFIG)."""
    if runtime is not None and runtime.mpi:
        by_rid = {rid(r, i): (r, i) for r, n in counts.items() for i in range(n)}
        used = hosts[: num_nodes if num_nodes is not None else len(hosts)]
        return {by_rid[h]: k for k, h in enumerate(used)}
    if runtime is None and strategy.elastic:
        return {}  # the c10d rendezvous assigns them at run time
    ranks: dict[tuple[str, int], int] = {}
    nxt = 0
    for role in job_kind.rank_roles:
        for i in range(counts.get(role, 0)):
            ranks[(role, i)] = nxt
            nxt += 1
    return ranks


def _elastic_bounds(spec: SpecFields, counts: Mapping[str, int]) -> tuple[int, int]:
    """(minReplicas, maxReplicas); both default to the Worker count. A bad option
    (validation reports it) counts as unset."""
    workers = counts.get("Worker", 0)
    lo = _whole(spec.backend_options.get("elastic_min_replicas"), workers)
    hi = _whole(spec.backend_options.get("elastic_max_replicas"), max(lo, workers))
    return lo, hi


def _whole(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
