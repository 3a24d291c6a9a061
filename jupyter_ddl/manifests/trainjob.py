"""TrainJob (trainer.kubeflow.org/v1alpha1, Kubeflow Trainer v2) for torch strategies.

The runtime (``torch-distributed``, ``deepspeed-distributed`` ...) owns the pod
templates; the TrainJob sets the trainer container (image, command, env, nodes,
resources) and reaches the rest of the pod spec (labels, node selector, tolerations,
volumes) through the field its Trainer release knows: ``podSpecOverrides`` (v2.0),
``podTemplateOverrides`` (v2.1) or ``runtimePatches`` (v2.2 on) (operator-contract.md
§4.1, §4.6). Every job of the runtime whose pods run the code gets the code volume:
an MPI runtime's ``node`` pods keep the runtime's image, so the code cannot travel
inside ``trainer.image`` alone (§10.19).
"""

from __future__ import annotations

from typing import Any

from jupyter_ddl.core import contract
from jupyter_ddl.core.kinds import TrainJobKind
from jupyter_ddl.manifests import commands, common, trainingruntime
from jupyter_ddl.models import JobSpec

PATCH_MANAGER = "jupyter-ddl.io/submitter"


def build(spec: JobSpec, code: common.Code) -> dict[str, Any]:
    shape = spec.shape
    kind = shape.job_kind
    assert isinstance(kind, TrainJobKind) and shape.runtime is not None
    release = kind.release
    if shape.trainjob_mpi:
        program = list(spec.command or code.command)
        cmd = commands.mpirun(program, shape.world_size, hostfile=contract.MPI_HOSTFILE_PATH,
                            forward=common.env_names(spec))  # fmt: skip
    else:
        cmd = commands.launch_command(spec, code.command)
    trainer: dict[str, Any] = {
        "image": code.image,
        "command": commands.in_work_dir(cmd),
        "env": common.env_list(spec),
        "numNodes": shape.num_nodes,
        "numProcPerNode": shape.nproc_per_node,
    }
    res = common.resources(shape.resources["Node"])
    if res:
        trainer["resourcesPerNode"] = res
    ref = {
        "name": shape.runtime.name,
        "apiGroup": kind.group,
        "kind": spec.backend_options.get("runtime_kind", "ClusterTrainingRuntime"),
    }
    if trainingruntime.needs_own_runtime(spec):  # backoff and restart live in the runtime
        ref.update(name=trainingruntime.name_for(spec.name), kind=trainingruntime.KIND)
    body: dict[str, Any] = {
        "runtimeRef": ref,
        "trainer": trainer,
        release.override_field: _overrides(spec, code),
    }
    if spec.active_deadline_seconds is not None and release.deadline:
        body["activeDeadlineSeconds"] = spec.active_deadline_seconds
    if release.job_metadata:  # v2.0, v2.1: labels for the JobSet and its Jobs
        body["labels"] = common.our_labels(spec, code.digest)
    return common.job_object(spec, code, body)


def patched_jobs(spec: JobSpec) -> list[str]:
    """The runtime's jobs whose pods run the code: the trainer step, and every MPI host."""
    runtime = spec.shape.runtime
    assert runtime is not None
    wanted = {runtime.trainer_job, *runtime.hosts}
    return [j for j in runtime.jobs if j in wanted] or [runtime.trainer_job]


def _overrides(spec: JobSpec, code: common.Code) -> list[dict[str, Any]]:
    """One entry in the release's override field (§4.1, §4.6). No env: the webhook
    lets env reach the ``node`` container only through ``trainer``."""
    kind = spec.shape.job_kind
    assert isinstance(kind, TrainJobKind)
    pod: dict[str, Any] = common.pod_spec_extras(spec, code.configmap, code.paths)
    pod["containers"] = [
        {"name": kind.container("Node"), "volumeMounts": common.volume_mounts(spec, code.configmap)}
    ]
    meta = {
        "labels": common.our_labels(spec, code.digest),
        "annotations": {**spec.annotations, common.ISTIO_INJECT: "false"},
    }
    jobs = patched_jobs(spec)
    field = kind.release.override_field
    if field == "podSpecOverrides":  # v2.0: pod spec fields at the top, no pod metadata
        return [{"targetJobs": [{"name": j} for j in jobs], **pod}]
    if field == "podTemplateOverrides":  # v2.1
        return [{"targetJobs": [{"name": j} for j in jobs], "metadata": meta, "spec": pod}]
    template = {"metadata": meta, "spec": pod}
    return [
        {
            "manager": PATCH_MANAGER,
            "trainingRuntimeSpec": {
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {"name": j, "template": {"spec": {"template": template}}} for j in jobs
                        ]
                    }
                }
            },
        }
    ]
