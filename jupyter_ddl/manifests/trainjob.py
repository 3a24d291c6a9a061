"""TrainJob (trainer.kubeflow.org/v1alpha1, Kubeflow Trainer v2) for torch strategies.

The runtime (``torch-distributed``, ``deepspeed-distributed`` ...) owns the pod
templates; the TrainJob sets the trainer container (image, command, env, nodes,
resources) and reaches the rest of the pod spec (labels, node selector, tolerations,
volumes) through ``runtimePatches`` (operator-contract.md §4.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import contract
from ..models import JobSpec
from . import common

PATCH_MANAGER = "jupyter-ddl.io/submitter"
TRAINER_CONTAINER = "node"  # the container the runtime hands trainer.* to (§4.1)


def build(
    spec: JobSpec,
    *,
    image: str,
    command: Sequence[str],
    code_digest: str | None,
    code_configmap: str | None,
    code_paths: Sequence[str] | None = None,
) -> dict[str, Any]:
    shape = spec.shape
    if shape.trainjob_mpi:
        program = list(spec.command or command)
        cmd = common.mpirun(program, shape.world_size, hostfile=contract.MPI_HOSTFILE_PATH)
    else:
        cmd = common.launch_command(spec, command)
    trainer: dict[str, Any] = {
        "image": image,
        "command": cmd,
        "env": common.env_list(spec),
        "numNodes": shape.count("Node"),
        "numProcPerNode": shape.nproc_per_node,
    }
    res = common.resources(shape.resources["Node"])
    if res:
        trainer["resourcesPerNode"] = res
    body: dict[str, Any] = {
        "runtimeRef": {
            "name": shape.trainjob_runtime,
            "apiGroup": "trainer.kubeflow.org",
            "kind": spec.backend_options.get("runtime_kind", "ClusterTrainingRuntime"),
        },
        "trainer": trainer,
        "runtimePatches": [_patch(spec, code_digest, code_configmap, code_paths)],
    }
    if spec.active_deadline_seconds is not None:
        body["activeDeadlineSeconds"] = spec.active_deadline_seconds
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": common.metadata(spec, code_digest),
        "spec": body,
    }


def _patch(
    spec: JobSpec,
    code_digest: str | None,
    code_configmap: str | None,
    code_paths: Sequence[str] | None,
) -> dict[str, Any]:
    pod: dict[str, Any] = common.pod_spec_extras(spec, code_configmap, code_paths)
    mounts = common.volume_mounts(spec, code_configmap)
    if mounts:
        pod["containers"] = [{"name": TRAINER_CONTAINER, "volumeMounts": mounts}]
    template = {
        "metadata": {
            "labels": common.our_labels(spec, code_digest),
            "annotations": {**spec.annotations, common.ISTIO_INJECT: "false"},
        },
        "spec": pod,
    }
    jobs = ["launcher", "node"] if spec.shape.trainjob_mpi else ["node"]
    return {
        "manager": PATCH_MANAGER,
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": job, "template": {"spec": {"template": template}}} for job in jobs
                    ]
                }
            }
        },
    }
