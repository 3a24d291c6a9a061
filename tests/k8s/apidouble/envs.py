"""What each operator writes into a replica's environment, read from the job object
alone, as the operators' own code does (training-operator v1.9 ``pkg/controller.v1/
tensorflow/tensorflow.go`` and ``pytorch/envvar.go``, mpi-operator v0.8
``pkg/controller/mpi_job_controller.go``, Trainer v2.3 ``pkg/runtime/framework/plugins/
torch/torch.go`` and ``mpi/mpi.go``; summarised in operator-contract.md §2, §3.3, §4.3).

Deliberately independent of the product: a mistake in ``jupyter_ddl.core.contract`` must
show up as a disagreement here. The only liberty taken is where replicas live: every
"pod" is a process on this machine, so ``addr(rtype, index)`` answers 127.0.0.1 and a
port of its own instead of the Service DNS name and the default port (§7).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Addr = Callable[[str, int], tuple[str, int]]
REPLICA_MAPS = {
    "TFJob": "tfReplicaSpecs",
    "PyTorchJob": "pytorchReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
}
#: the container each v1 kind writes its env and reads its port from (§1.1)
DEFAULT_CONTAINER = {"TFJob": "tensorflow", "PyTorchJob": "pytorch"}
DEFAULT_PORT = {"TFJob": ("tfjob-port", 2222), "PyTorchJob": ("pytorchjob-port", 23456)}
TRAINJOB_PORT = 29500
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
HOSTFILE = "/etc/mpi/hostfile"


def replicas(kind: str, job: dict[str, Any]) -> dict[str, int]:
    """Replica counts as the operators default them: a missing ``replicas`` is 1
    (training-operator), Worker 0 for MPIJob (mpi-operator ``default.go``)."""
    out = {}
    for rtype, rspec in ((job.get("spec") or {}).get(REPLICA_MAPS[kind]) or {}).items():
        default = 0 if (kind, rtype) == ("MPIJob", "Worker") else 1
        n = (rspec or {}).get("replicas")
        out[rtype] = default if n is None else int(n)
    return out


def _containers(rspec: dict[str, Any]) -> list[dict[str, Any]]:
    return ((rspec.get("template") or {}).get("spec") or {}).get("containers") or []


def declared_port(kind: str, rspec: dict[str, Any]) -> int:
    """The containerPort named ``<kind>-port`` on the default container, else the
    default the operator's defaulting would have added."""
    name, default = DEFAULT_PORT[kind]
    for c in _containers(rspec):
        if c.get("name") == DEFAULT_CONTAINER[kind]:
            for p in c.get("ports") or []:
                if p.get("name") == name:
                    return int(p["containerPort"])
    return default


def _value(name: str, value: Any) -> dict[str, Any]:
    return {"name": name, "value": str(value)}


# -- TFJob (tensorflow.go genTFConfigJSONStr) ----------------------------------------
def tf_env(job: dict[str, Any], rtype: str, index: int, addr: Addr) -> list[dict[str, Any]]:
    counts = replicas("TFJob", job)
    if sum(counts.values()) == 1:  # not distributed: the operator writes nothing
        return []
    cluster: dict[str, list[str]] = {}
    for rt in sorted(counts, key=str.lower):
        cluster[rt.lower()] = [":".join(map(str, addr(rt, i))) for i in range(counts[rt])]
    # a Go struct: field order cluster, task, environment; compact separators
    doc = {"cluster": cluster, "task": {"type": rtype.lower(), "index": index},
           "environment": "cloud"}  # fmt: skip
    return [_value("TF_CONFIG", json.dumps(doc, separators=(",", ":")))]


# -- PyTorchJob (envvar.go setPodEnv, elastic.go) ------------------------------------
def _nproc(spec: dict[str, Any]) -> str | None:
    elastic = spec.get("elasticPolicy") or {}
    if spec.get("nprocPerNode") is not None:
        return str(spec["nprocPerNode"])
    if elastic.get("nProcPerNode") is not None:
        return str(elastic["nProcPerNode"])
    return "auto"  # pytorch_defaults.go


def pytorch_env(job: dict[str, Any], rtype: str, index: int, addr: Addr) -> list[dict[str, Any]]:
    spec = job.get("spec") or {}
    counts = replicas("PyTorchJob", job)
    env = [_value("PYTHONUNBUFFERED", "1")]
    nproc = _nproc(spec)
    elastic = spec.get("elasticPolicy")
    if elastic is not None:
        host = elastic.get("rdzvHost")
        port = elastic.get("rdzvPort")
        w_host, w_port = addr("Worker", 0)
        env.append(_value("PET_RDZV_ENDPOINT", f"{host or w_host}:{port or w_port}"))
        env.append(_value("PET_RDZV_BACKEND", elastic.get("rdzvBackend") or "c10d"))
        lo, hi = elastic.get("minReplicas"), elastic.get("maxReplicas")
        workers = counts.get("Worker", 0)
        lo, hi = lo or hi or workers, hi or lo or workers
        env.append(_value("PET_NNODES", f"{lo}:{hi}"))
        if elastic.get("maxRestarts") is not None:
            env.append(_value("PET_MAX_RESTARTS", elastic["maxRestarts"]))
        if nproc is not None:
            env.append(_value("PET_NPROC_PER_NODE", nproc))
        return env
    if nproc is not None:
        env.append(_value("PET_NPROC_PER_NODE", nproc))
    total = counts.get("Master", 0) + counts.get("Worker", 0)
    env.append(_value("PET_NNODES", total))
    if "Master" not in counts:  # no Master: no rendezvous variables at all
        return env
    host, port = addr("Master", 0)
    per_node = int(nproc) if nproc and nproc.isdigit() else 1
    rank = index if rtype == "Master" else index + 1
    env += [_value("MASTER_PORT", port), _value("PET_MASTER_PORT", port),
            _value("MASTER_ADDR", host), _value("PET_MASTER_ADDR", host),
            _value("WORLD_SIZE", total * per_node), _value("RANK", rank),
            _value("PET_NODE_RANK", rank)]  # fmt: skip
    return env


# -- MPIJob v2beta1 (mpi_job_controller.go newLauncherPodTemplate) ------------------
def mpi_env(job: dict[str, Any], rtype: str) -> list[dict[str, Any]]:
    spec = job.get("spec") or {}
    if rtype != "Launcher":
        return [_value("K_MPI_JOB_ROLE", "worker")]
    slots = spec.get("slotsPerWorker") or 1
    env = [_value("K_MPI_JOB_ROLE", "launcher")]
    impl = spec.get("mpiImplementation") or "OpenMPI"
    if impl == "OpenMPI":
        env += [_value("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
                _value("OMPI_MCA_orte_default_hostfile", HOSTFILE),
                _value("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
                _value("OMPI_MCA_orte_set_default_slots", slots)]  # fmt: skip
    elif impl == "Intel":
        env += [_value("I_MPI_HYDRA_HOST_FILE", HOSTFILE),
                _value("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "-o ConnectionAttempts=10"),
                _value("I_MPI_PERHOST", slots)]  # fmt: skip
    else:
        env += [_value("HYDRA_HOST_FILE", HOSTFILE),
                _value("HYDRA_LAUNCH_EXTRA_ARGS", "-o ConnectionAttempts=10")]  # fmt: skip
    if not spec.get("runLauncherAsWorker"):
        env += [_value("NVIDIA_VISIBLE_DEVICES", ""), _value("NVIDIA_DRIVER_CAPABILITIES", "")]
    return env


def mpi_hostfile(slots: int, hosts: int) -> str:
    """The operator writes one ``<fqdn> slots=N`` line per worker; every worker here is
    this machine, so its one-host form carries all their slots (§7)."""
    return f"localhost slots={slots * hosts}\n"


# -- TrainJob (torch.go, mpi.go) -------------------------------------------------------
def _gpus(resources: dict[str, Any]) -> int:
    for part in ("requests", "limits"):
        for name, value in (resources.get(part) or {}).items():
            if "gpu" in name:
                return int(str(value))
    return 0


def _cpus(resources: dict[str, Any]) -> int:
    for part in ("requests", "limits"):
        value = str((resources.get(part) or {}).get("cpu") or "")
        if value:
            return max(
                1, int(float(value[:-1]) / 1000) if value.endswith("m") else int(float(value))
            )
    return 1


def trainjob_torch_env(
    trainer: dict[str, Any], runtime_nodes: int, addr: Addr
) -> list[dict[str, Any]]:
    """``PET_*`` for every node of a torch runtime; the node rank comes from the Job's
    completion index through the downward API, as the runtime writes it."""
    nodes = int(trainer.get("numNodes") or runtime_nodes or 1)
    res = trainer.get("resourcesPerNode") or {}
    nproc = trainer.get("numProcPerNode")
    if nproc is None:
        nproc = "auto" if _gpus(res) else _cpus(res)
    host, port = addr("Node", 0)
    rank_ref = {"fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}}
    return [_value("PET_NNODES", nodes), _value("PET_NPROC_PER_NODE", nproc),
            {"name": "PET_NODE_RANK", "valueFrom": rank_ref},
            _value("PET_MASTER_ADDR", host), _value("PET_MASTER_PORT", port)]  # fmt: skip


def trainjob_mpi_launcher_env(slots: int) -> list[dict[str, Any]]:
    return [_value("OMPI_MCA_orte_default_hostfile", HOSTFILE),
            _value("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
            _value("OMPI_MCA_orte_set_default_slots", slots),
            _value("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10")]  # fmt: skip
