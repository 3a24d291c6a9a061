"""The environment each replica gets from the Kubeflow operators (pure, no I/O).

One function, :func:`replica_env`, says what the operator injects into a replica of a
job, following ``docs/operator-contract.md`` (section numbers below refer to it).
Host names and ports come from an :class:`Endpoints` value, so the same code serves
the cluster (operator DNS names, default ports) and the local backend (127.0.0.1 and
free ports). Nothing local-only (``CUDA_VISIBLE_DEVICES`` ...) is added here: the
operators set nothing of the kind (§7), the local backend adds it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from .errors import ValidationError
from .models import ROLES, JobSpec
from .strategies import Strategy, get_strategy

# Default ports the operators use (§1.1, §4.3); MPI workers are reached over ssh (§3.2).
TF_PORT = 2222
TORCH_PORT = 23456
TRAINJOB_PORT = 29500
SSH_PORT = 22

TF_PORT_NAME = "tfjob-port"
TORCH_PORT_NAME = "pytorchjob-port"

MPI_HOSTFILE_PATH = "/etc/mpi/hostfile"  # §3.3 (mpi-operator) and §4.3 (Trainer v2 MPI)
MPI_RSH_ARGS = "-o ConnectionAttempts=10"

#: TrainJob torch env names users may not set themselves (§4.3)
TRAINJOB_RESERVED_ENV = (
    "PET_NNODES",
    "PET_NPROC_PER_NODE",
    "PET_NODE_RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
)

#: Trainer v2 runtimes whose ML policy is MPI rather than torch (§4.1, §4.3)
MPI_RUNTIMES = ("deepspeed-distributed",)


@dataclass(frozen=True)
class Endpoints:
    """Where each replica listens: replica id (``worker-1``) -> (host, port)."""

    addresses: dict[str, tuple[str, int]] = field(default_factory=dict)
    namespace: str = "default"

    def host(self, rid: str) -> str:
        return self.address(rid)[0]

    def hostport(self, rid: str) -> str:
        host, port = self.address(rid)
        return f"{host}:{port}"

    def address(self, rid: str) -> tuple[str, int]:
        """(host, port) of replica ``rid``; raises ValidationError when it is missing."""
        try:
            return self.addresses[rid]
        except KeyError:
            raise ValidationError(
                f"endpoints: no address for replica {rid!r}; build endpoints with "
                "cluster_endpoints() or local_endpoints() for this spec"
            ) from None


def rid(role: str, index: int) -> str:
    """The replica id ``worker-1``: the operator's pod-name suffix (§1.3)."""
    return f"{role.lower()}-{index}"


def job_kind(spec: JobSpec) -> str:
    """``TFJob`` | ``PyTorchJob`` | ``MPIJob`` | ``TrainJob`` for this spec."""
    if spec.target == "TrainJob":
        return "TrainJob"
    return get_strategy(spec.strategy).kind


def trainjob_runtime(spec: JobSpec) -> str:
    """The Trainer v2 runtime a TrainJob of this spec references."""
    return spec.runtime_ref or get_strategy(spec.strategy).trainjob_runtime or "torch-distributed"


def trainjob_is_mpi(spec: JobSpec) -> bool:
    return job_kind(spec) == "TrainJob" and trainjob_runtime(spec) in MPI_RUNTIMES


def effective_replicas(spec: JobSpec) -> dict[str, int]:
    """Replica count per role: the strategy's defaults overridden by ``spec.replicas``.

    Zero counts are dropped (the role is absent). A TrainJob has ``Node`` replicas
    (``spec.replicas["Node"]`` or the sum of the strategy's roles), plus one
    ``Launcher`` when its runtime is an MPI one.
    """
    strategy = get_strategy(spec.strategy)
    counts = {**strategy.default_replicas(), **spec.replicas}
    if job_kind(spec) == "TrainJob":
        nodes = counts.pop("Node", None)
        if nodes is None:
            nodes = sum(n for n in counts.values() if n > 0)
        counts = {"Launcher": 1, "Node": nodes} if trainjob_is_mpi(spec) else {"Node": nodes}
    return {role: counts[role] for role in _ordered(counts) if counts[role] > 0}


def _ordered(roles: dict[str, int]) -> list[str]:
    known = [r for r in ROLES if r in roles]
    return known + sorted(r for r in roles if r not in ROLES)


def replica_ids(spec: JobSpec) -> list[tuple[str, int]]:
    """Every (role, index) of the job, roles in ``models.ROLES`` order."""
    return [(role, i) for role, n in effective_replicas(spec).items() for i in range(n)]


def nproc_per_node(spec: JobSpec) -> int:
    """Processes per replica: the spec's value, else the GPU count when > 1, else 1.

    ``torch-dp`` drives every GPU from one process, so it is always 1.
    """
    strategy = get_strategy(spec.strategy)
    if strategy.name == "torch-dp":
        return 1
    if spec.nproc_per_node:
        return spec.nproc_per_node
    gpus = max((spec.resources_for(r).gpu for r in effective_replicas(spec)), default=0)
    return gpus if gpus > 1 else 1


def cluster_endpoints(spec: JobSpec, namespace: str = "default") -> Endpoints:
    """The DNS names and default ports the operator gives each replica."""
    kind, name = job_kind(spec), spec.name
    out: dict[str, tuple[str, int]] = {}
    for role, i in replica_ids(spec):
        low = role.lower()
        if kind == "TFJob":  # per-replica Service, namespace-qualified in TF_CONFIG (§2.1)
            out[rid(role, i)] = (f"{name}-{low}-{i}.{namespace}.svc", TF_PORT)
        elif kind == "PyTorchJob":  # short Service name (§2.2)
            out[rid(role, i)] = (f"{name}-{low}-{i}", TORCH_PORT)
        elif kind == "MPIJob":  # pod hostname under the job's headless Service (§3.2, §3.3)
            pod = f"{name}-launcher" if role == "Launcher" else f"{name}-worker-{i}"
            out[rid(role, i)] = (f"{pod}.{name}.{namespace}.svc", SSH_PORT)
        else:  # TrainJob: JobSet pod <job>-<rjob>-<jobIndex>-<podIndex>.<job> (§4.2)
            out[rid(role, i)] = (f"{name}-{low}-0-{i}.{name}", TRAINJOB_PORT)
    return Endpoints(out, namespace)


def local_endpoints(spec: JobSpec, ports: Sequence[int]) -> Endpoints:
    """127.0.0.1 with ``ports[k]`` for the k-th replica of :func:`replica_ids`."""
    ids = replica_ids(spec)
    if len(ports) < len(ids):
        raise ValidationError(
            f"ports: {len(ids)} replicas need {len(ids)} ports, got {len(ports)}; "
            "reserve one free port per replica"
        )
    return Endpoints({rid(r, i): ("127.0.0.1", p) for (r, i), p in zip(ids, ports, strict=False)})


def replica_env(spec: JobSpec, role: str, index: int, endpoints: Endpoints) -> dict[str, str]:
    """The environment the operator injects into replica (role, index) of ``spec``.

    Raises ValidationError when the job has no such replica.
    """
    if (role, index) not in replica_ids(spec):
        raise ValidationError(
            f"replica: {spec.name} has no {role} {index}; replicas: "
            + ", ".join(rid(r, i) for r, i in replica_ids(spec))
        )
    kind = job_kind(spec)
    if kind == "TFJob":
        return _tf_env(spec, role, index, endpoints)
    if kind == "PyTorchJob":
        return _pytorch_env(spec, get_strategy(spec.strategy), role, index, endpoints)
    if kind == "MPIJob":
        return _mpi_launcher_env(spec.slots_per_worker) if role == "Launcher" else _mpi_worker()
    return _trainjob_env(spec, role, index, endpoints)


# -- §2.1 TFJob ------------------------------------------------------------------
def tf_config(spec: JobSpec, role: str, index: int, endpoints: Endpoints) -> str:
    """TF_CONFIG as the operator writes it: Go's compact JSON, cluster keys sorted,
    Evaluators inside ``cluster`` (§2.1, §10.3)."""
    cluster: dict[str, list[str]] = {}
    for r, i in replica_ids(spec):
        cluster.setdefault(r.lower(), []).append(endpoints.hostport(rid(r, i)))
    doc = {
        "cluster": dict(sorted(cluster.items())),
        "task": {"type": role.lower(), "index": index},
        "environment": "cloud",
    }
    return json.dumps(doc, separators=(",", ":"))


def _tf_env(spec: JobSpec, role: str, index: int, endpoints: Endpoints) -> dict[str, str]:
    if len(replica_ids(spec)) == 1:  # not distributed: no TF_CONFIG at all (§2.1)
        return {}
    return {"TF_CONFIG": tf_config(spec, role, index, endpoints)}


# -- §2.2 PyTorchJob ---------------------------------------------------------------
def elastic_bounds(spec: JobSpec) -> tuple[int, int]:
    """(minReplicas, maxReplicas) for an elastic job; both default to the Worker count."""
    workers = effective_replicas(spec).get("Worker", 0)
    lo = int(spec.backend_options.get("elastic_min_replicas", workers))
    hi = int(spec.backend_options.get("elastic_max_replicas", max(lo, workers)))
    return lo, hi


def _pytorch_env(
    spec: JobSpec, strategy: Strategy, role: str, index: int, endpoints: Endpoints
) -> dict[str, str]:
    counts = effective_replicas(spec)
    nproc = nproc_per_node(spec)
    env = {"PYTHONUNBUFFERED": "1", "PET_NPROC_PER_NODE": str(nproc)}
    if strategy.elastic:
        lo, hi = elastic_bounds(spec)
        env["PET_RDZV_ENDPOINT"] = endpoints.hostport("worker-0")
        env["PET_RDZV_BACKEND"] = "c10d"
        env["PET_NNODES"] = f"{lo}:{hi}"
        return env
    env["PET_NNODES"] = str(counts.get("Master", 0) + counts.get("Worker", 0))
    if "Master" not in counts:  # no Master: no rendezvous variables at all (§10.2)
        return env
    host, port = endpoints.address("master-0")
    rank = index if role == "Master" else index + counts["Master"]
    env.update(
        MASTER_PORT=str(port),
        PET_MASTER_PORT=str(port),
        MASTER_ADDR=host,
        PET_MASTER_ADDR=host,
        WORLD_SIZE=str((counts["Master"] + counts.get("Worker", 0)) * nproc),
        RANK=str(rank),
        PET_NODE_RANK=str(rank),
    )
    return env


# -- §3.3 MPIJob v2beta1 -----------------------------------------------------------
def _mpi_launcher_env(slots: int) -> dict[str, str]:
    return {
        "K_MPI_JOB_ROLE": "launcher",
        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
        "OMPI_MCA_orte_default_hostfile": MPI_HOSTFILE_PATH,
        "OMPI_MCA_plm_rsh_args": MPI_RSH_ARGS,
        "OMPI_MCA_orte_set_default_slots": str(slots),
        # the launcher runs no ranks, so it is kept off the GPUs
        "NVIDIA_VISIBLE_DEVICES": "",
        "NVIDIA_DRIVER_CAPABILITIES": "",
    }


def _mpi_worker() -> dict[str, str]:
    return {"K_MPI_JOB_ROLE": "worker"}


def mpi_slots(spec: JobSpec) -> int:
    """Slots per MPI host: ``slotsPerWorker`` (MPIJob) or ``numProcPerNode`` (TrainJob)."""
    return nproc_per_node(spec) if job_kind(spec) == "TrainJob" else spec.slots_per_worker


def mpi_hostfile(spec: JobSpec, endpoints: Endpoints, *, local: bool = False) -> str:
    """The OpenMPI hostfile the launcher sees (§3.3, §4.3).

    ``local=True`` gives the one-host form for mpirun on this machine (§7): a single
    ``localhost`` line carrying every worker's slots.
    """
    counts = effective_replicas(spec)
    hosts = "Node" if "Node" in counts else "Worker"
    slots = mpi_slots(spec)
    if local:
        return f"localhost slots={slots * counts.get(hosts, 0)}\n"
    lines = [f"{endpoints.host(rid(hosts, i))} slots={slots}" for i in range(counts.get(hosts, 0))]
    return "".join(line + "\n" for line in lines)


# -- §4.3 TrainJob -------------------------------------------------------------------
def _trainjob_env(spec: JobSpec, role: str, index: int, endpoints: Endpoints) -> dict[str, str]:
    nproc = nproc_per_node(spec)
    if trainjob_is_mpi(spec):
        if role != "Launcher":
            return {}
        return {
            "OMPI_MCA_orte_default_hostfile": MPI_HOSTFILE_PATH,
            "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
            "OMPI_MCA_orte_set_default_slots": str(nproc),
            "OMPI_MCA_plm_rsh_args": MPI_RSH_ARGS,
        }
    host, port = endpoints.address("node-0")
    return {
        "PET_NNODES": str(effective_replicas(spec)["Node"]),
        "PET_NPROC_PER_NODE": str(nproc),
        "PET_NODE_RANK": str(index),
        "PET_MASTER_ADDR": host,
        "PET_MASTER_PORT": str(port),
    }


def operator_env_names(spec: JobSpec) -> set[str]:
    """Every variable name the operator injects somewhere in this job."""
    ep = cluster_endpoints(spec, spec.namespace or "default")
    names: set[str] = set()
    for role, i in replica_ids(spec):
        names.update(replica_env(spec, role, i, ep))
    return names
