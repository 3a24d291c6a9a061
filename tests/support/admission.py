"""The admission rules the operators apply beyond the CRD schema.

``admission_problems(obj)`` returns what the training-operator webhooks (docs/operator-contract.md
§1.2), the mpi-operator's in-controller validation (§3.1) and Trainer v2 (§4.1, §4.3)
would refuse, one line each; [] when the object would be accepted. Used by the
manifest tests and by the Kubernetes API double.
"""

from __future__ import annotations

import re
from typing import Any

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_V1_MAPS = {
    "TFJob": ("tfReplicaSpecs", "tensorflow"),
    "PyTorchJob": ("pytorchReplicaSpecs", "pytorch"),
}
_V1_MANAGED_BY = ("kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue")
_MPI_MANAGED_BY = ("kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue")
_TRAINJOB_RESERVED = (
    "PET_NNODES",
    "PET_NPROC_PER_NODE",
    "PET_NODE_RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
)


def dns1035(name: str) -> bool:
    return len(name) <= 63 and bool(_DNS1035.match(name))


def admission_problems(obj: dict[str, Any]) -> list[str]:
    kind = obj.get("kind")
    if kind in _V1_MAPS:
        return _v1(obj, *_V1_MAPS[kind])
    if kind == "MPIJob" and obj.get("apiVersion") == "kubeflow.org/v2beta1":
        return _mpi(obj)
    if kind == "TrainJob":
        return _trainjob(obj)
    return []


def _name(obj: dict[str, Any]) -> list[str]:
    name = obj.get("metadata", {}).get("name", "")
    return [] if dns1035(name) else [f"metadata.name {name!r} is not a DNS-1035 label"]


def _containers(path: str, rspec: dict[str, Any], default_name: str | None) -> list[str]:
    containers = rspec.get("template", {}).get("spec", {}).get("containers") or []
    if not containers:
        return [f"{path}: needs at least one container"]
    out = [
        f"{path}.containers[{i}]: no image" for i, c in enumerate(containers) if not c.get("image")
    ]
    if default_name and not any(c.get("name") == default_name for c in containers):
        out.append(f"{path}: no container named {default_name!r}")
    return out


def _v1(obj: dict[str, Any], map_key: str, default_name: str) -> list[str]:
    """training-operator v1.9 webhooks (§1.2)."""
    spec = obj.get("spec", {})
    out = _name(obj)
    managed = spec.get("runPolicy", {}).get("managedBy")
    if managed is not None and managed not in _V1_MANAGED_BY:
        out.append(f"spec.runPolicy.managedBy {managed!r} not allowed")
    replicas: dict[str, Any] = spec.get(map_key) or {}
    for rtype, rspec in replicas.items():
        out += _containers(f"spec.{map_key}.{rtype}", rspec, default_name)
    if obj["kind"] == "TFJob":
        chiefs = sum(replicas[r].get("replicas", 1) for r in ("Chief", "Master") if r in replicas)
        if chiefs > 1:
            out.append("TFJob: more than one Chief/Master replica")
        return out
    for rtype in replicas:
        if rtype not in ("Master", "Worker"):  # checked before CamelCase normalisation
            out.append(f"PyTorchJob: replica type {rtype!r} is not Master or Worker")
    if "Master" in replicas and replicas["Master"].get("replicas") != 1:
        out.append("PyTorchJob: Master.replicas must be set to exactly 1")
    if (
        "Worker" in replicas
        and replicas["Worker"].get("replicas") is not None
        and replicas["Worker"]["replicas"] < 1
    ):
        out.append("PyTorchJob: Worker.replicas must be at least 1")
    elastic = spec.get("elasticPolicy")
    if elastic is not None:
        if "Worker" not in replicas:
            out.append("PyTorchJob: elasticPolicy needs a Worker replica spec")
        if elastic.get("nProcPerNode") is not None and spec.get("nprocPerNode") is not None:
            out.append("PyTorchJob: elasticPolicy.nProcPerNode and spec.nprocPerNode together")
    return out


def _mpi(obj: dict[str, Any]) -> list[str]:
    """mpi-operator v0.8 validation (§3.1): failures would only be a Warning Event."""
    spec = obj.get("spec", {})
    name = obj.get("metadata", {}).get("name", "")
    replicas: dict[str, Any] = spec.get("mpiReplicaSpecs") or {}
    out = []
    workers = replicas.get("Worker", {}).get("replicas", 0) or 0
    if not dns1035(f"{name}-worker-{max(workers - 1, 0)}"):
        out.append(f"{name}-worker-{max(workers - 1, 0)} is not a DNS-1035 label")
    launcher = replicas.get("Launcher")
    if launcher is None or launcher.get("replicas", 1) != 1:
        out.append("MPIJob: needs a Launcher with replicas 1")
    if "Worker" in replicas and (replicas["Worker"].get("replicas") or 0) < 1:
        out.append("MPIJob: Worker.replicas must be written and at least 1")
    for rtype, rspec in replicas.items():
        if rtype not in ("Launcher", "Worker"):
            out.append(f"MPIJob: replica type {rtype!r} is not Launcher or Worker")
        if rspec.get("restartPolicy", "Never") not in ("Never", "OnFailure"):
            out.append(
                f"MPIJob: {rtype}.restartPolicy {rspec['restartPolicy']!r} not Never/OnFailure"
            )
        out += _containers(f"spec.mpiReplicaSpecs.{rtype}", rspec, None)
    rp = spec.get("runPolicy", {})
    if rp.get("cleanPodPolicy", "None") not in ("None", "Running", "All"):
        out.append(f"MPIJob: cleanPodPolicy {rp['cleanPodPolicy']!r}")
    for key in ("ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit"):
        if rp.get(key) is not None and rp[key] < 0:
            out.append(f"MPIJob: runPolicy.{key} is negative")
    if rp.get("managedBy") is not None and rp["managedBy"] not in _MPI_MANAGED_BY:
        out.append(f"MPIJob: runPolicy.managedBy {rp['managedBy']!r} not allowed")
    return out


def _trainjob(obj: dict[str, Any]) -> list[str]:
    """Trainer v2.3 webhook: reserved PET_* names, no env patches on the node container."""
    spec = obj.get("spec", {})
    out = _name(obj)
    for env in spec.get("trainer", {}).get("env", []):
        if env.get("name") in _TRAINJOB_RESERVED:
            out.append(f"TrainJob: trainer.env may not set {env['name']}")
    for patch in spec.get("runtimePatches", []):
        rjobs = (
            patch.get("trainingRuntimeSpec", {})
            .get("template", {})
            .get("spec", {})
            .get("replicatedJobs", [])
        )
        for rjob in rjobs:
            pod = rjob.get("template", {}).get("spec", {}).get("template", {}).get("spec", {})
            for c in pod.get("containers", []):
                if c.get("name") in ("node", "dataset-initializer", "model-initializer") and c.get(
                    "env"
                ):
                    out.append(
                        f"TrainJob: runtimePatches may not set env of container {c['name']!r}"
                    )
    return out
