"""The environment each replica gets from the Kubeflow operators (pure, no I/O).

One function, :func:`replica_env`, says what the operator injects into a replica of a
job, following ``docs/operator-contract.md`` (section numbers below refer to it); the
job's kind (``kinds.py``) names the rules below that apply and where replicas listen.
Counts, ranks and world size come from the resolved ``spec.shape`` (``shape.py``).
Host names and ports come from an :class:`Endpoints` value, so the same code serves
the cluster (operator DNS names, default ports) and the local backend (127.0.0.1 and
free ports). Nothing local-only (``CUDA_VISIBLE_DEVICES`` ...) is added here: the
operators set nothing of the kind (§7), the local backend adds it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from jupyter_ddl.core.kinds import MPIJobKind, PyTorchJobKind, TFJobKind, TrainJobKind
from jupyter_ddl.core.shape import JobShape
from jupyter_ddl.core.shape import rid as rid  # callers read contract.rid
from jupyter_ddl.core.spec import JobSpec
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.i18n import tr

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
                tr(
                    "endpoints: no address for replica {rid!r}; build endpoints with "
                    "cluster_endpoints() or local_endpoints() for this spec",
                    rid=rid,
                )
            ) from None


def replica_ids(spec: JobSpec) -> list[tuple[str, int]]:
    """Every (role, index) of the job in order (``spec.shape.replica_ids``)."""
    return spec.shape.replica_ids


def cluster_endpoints(spec: JobSpec, namespace: str = "default") -> Endpoints:
    """The DNS names and default ports the operator gives each replica (§1.3, §3.2, §4.2)."""
    kind = spec.shape.job_kind
    return Endpoints(
        {rid(r, i): kind.address(spec.name, namespace, r, i) for r, i in replica_ids(spec)},
        namespace,
    )


def local_endpoints(spec: JobSpec, ports: Sequence[int]) -> Endpoints:
    """127.0.0.1 with ``ports[k]`` for the k-th replica of :func:`replica_ids`."""
    ids = replica_ids(spec)
    if len(ports) < len(ids):
        raise ValidationError(
            tr(
                "ports: {n} replicas need {n} ports, got {got}; reserve one free port per replica",
                n=len(ids),
                got=len(ports),
            )
        )
    return Endpoints({rid(r, i): ("127.0.0.1", p) for (r, i), p in zip(ids, ports, strict=False)})


def replica_env(spec: JobSpec, role: str, index: int, endpoints: Endpoints) -> dict[str, str]:
    """The environment the operator injects into replica (role, index) of ``spec``.

    Raises ValidationError when the job has no such replica.
    """
    shape = spec.shape
    if (role, index) not in shape.replica_ids:
        raise ValidationError(
            tr(
                "replica: {name} has no {role} {index}; replicas: {replicas}",
                name=spec.name,
                role=role,
                index=index,
                replicas=", ".join(r.rid for r in shape.replicas),
            )
        )
    kind = shape.job_kind
    if isinstance(kind, TFJobKind):
        return tf_env(shape, role, index, endpoints)
    if isinstance(kind, PyTorchJobKind):
        return pytorch_env(shape, role, index, endpoints)
    if isinstance(kind, MPIJobKind):
        return mpi_env(shape, role)
    if isinstance(kind, TrainJobKind):
        return trainjob_env(shape, role, index, endpoints)
    raise ValidationError(tr("kind: {kind} has no operator contract here", kind=kind.name))


# -- §2.1 TFJob ------------------------------------------------------------------
def tf_config(spec: JobSpec, role: str, index: int, endpoints: Endpoints) -> str:
    """TF_CONFIG as the operator writes it: Go's compact JSON, cluster keys sorted,
    Evaluators inside ``cluster`` (§2.1, §10.3)."""
    return _tf_config(spec.shape, role, index, endpoints)


def _tf_config(shape: JobShape, role: str, index: int, endpoints: Endpoints) -> str:
    cluster: dict[str, list[str]] = {}
    for r in shape.replicas:
        cluster.setdefault(r.role.lower(), []).append(endpoints.hostport(r.rid))
    doc = {
        "cluster": dict(sorted(cluster.items())),
        "task": {"type": role.lower(), "index": index},
        "environment": "cloud",
    }
    return json.dumps(doc, separators=(",", ":"))


def tf_env(shape: JobShape, role: str, index: int, endpoints: Endpoints) -> dict[str, str]:
    if shape.total == 1:  # not distributed: no TF_CONFIG at all (§2.1)
        return {}
    return {"TF_CONFIG": _tf_config(shape, role, index, endpoints)}


# -- §2.2 PyTorchJob ---------------------------------------------------------------
def pytorch_env(shape: JobShape, role: str, index: int, endpoints: Endpoints) -> dict[str, str]:
    nproc = shape.nproc_per_node
    env = {"PYTHONUNBUFFERED": "1", "PET_NPROC_PER_NODE": str(nproc)}
    if shape.elastic_bounds is not None:
        lo, hi = shape.elastic_bounds
        env["PET_RDZV_ENDPOINT"] = endpoints.hostport("worker-0")
        env["PET_RDZV_BACKEND"] = "c10d"
        env["PET_NNODES"] = f"{lo}:{hi}"
        return env
    env["PET_NNODES"] = str(shape.count("Master") + shape.count("Worker"))
    if not shape.count("Master"):  # no Master: no rendezvous variables at all (§10.2)
        return env
    host, port = endpoints.address("master-0")
    rank = str(next(r.rank for r in shape.replicas if (r.role, r.index) == (role, index)))
    env.update(
        MASTER_PORT=str(port),
        PET_MASTER_PORT=str(port),
        MASTER_ADDR=host,
        PET_MASTER_ADDR=host,
        WORLD_SIZE=str(shape.world_size),  # processes, while RANK stays node-level (§2.2)
        RANK=rank,
        PET_NODE_RANK=rank,
    )
    return env


# -- §3.3 MPIJob v2beta1 -----------------------------------------------------------
def mpi_env(shape: JobShape, role: str) -> dict[str, str]:
    return _mpi_launcher_env(shape.mpi_slots) if role == "Launcher" else _mpi_worker()


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


def mpi_hostfile(spec: JobSpec, endpoints: Endpoints, *, local: bool = False) -> str:
    """The OpenMPI hostfile the launcher sees (§3.3, §4.3): one line per host, in the
    order of ``shape.mpi_host_ids`` (a TrainJob's launcher among them when it runs as
    a node).

    ``local=True`` gives the one-host form for mpirun on this machine (§7): a single
    ``localhost`` line carrying every host's slots.
    """
    shape = spec.shape
    slots = shape.mpi_slots
    if local:
        return f"localhost slots={slots * len(shape.mpi_host_ids)}\n"
    return "".join(f"{endpoints.host(h)} slots={slots}\n" for h in shape.mpi_host_ids)


# -- §4.3 TrainJob -------------------------------------------------------------------
def trainjob_env(shape: JobShape, role: str, index: int, endpoints: Endpoints) -> dict[str, str]:
    nproc = shape.nproc_per_node
    if shape.trainjob_mpi:
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
        "PET_NNODES": str(shape.num_nodes),
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
