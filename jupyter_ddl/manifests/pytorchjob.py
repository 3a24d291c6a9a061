"""PyTorchJob (kubeflow.org/v1) for the torch strategies (contract §1, §2.2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import contract
from ..models import JobSpec
from ..strategies import get_strategy
from . import common

CONTAINER = "pytorch"


def build(
    spec: JobSpec,
    *,
    image: str,
    command: Sequence[str],
    code_digest: str | None,
    code_configmap: str | None,
    code_paths: Sequence[str] | None = None,
) -> dict[str, Any]:
    cmd = common.launch_command(spec, command)
    policy = common.restart_policy(spec, "OnFailure")
    replicas = {}
    for role, n in contract.effective_replicas(spec).items():
        c = common.container(spec, role, CONTAINER, image, cmd, code_configmap)
        c["ports"] = [{"name": contract.TORCH_PORT_NAME, "containerPort": contract.TORCH_PORT}]
        template = common.pod_template(
            spec,
            role,
            [c],
            code_digest=code_digest,
            code_configmap=code_configmap,
            code_paths=code_paths,
        )
        replicas[role] = common.replica_spec(n, policy, template)
    body: dict[str, Any] = {
        # explicit: the operator's default "auto" would make WORLD_SIZE disagree with torchrun
        "nprocPerNode": str(contract.nproc_per_node(spec)),
        "runPolicy": common.run_policy(spec),
        "pytorchReplicaSpecs": replicas,
    }
    if get_strategy(spec.strategy).elastic:
        lo, hi = contract.elastic_bounds(spec)
        body["elasticPolicy"] = {"rdzvBackend": "c10d", "minReplicas": lo, "maxReplicas": hi}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": common.metadata(spec, code_digest),
        "spec": body,
    }
