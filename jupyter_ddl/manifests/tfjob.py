"""TFJob (kubeflow.org/v1) for the TensorFlow strategies (contract §1, §2.1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import contract
from ..models import JobSpec
from . import common

CONTAINER = "tensorflow"  # the operator puts TF_CONFIG only into this container (§10.4)


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
    policy = common.restart_policy(spec, "Never")
    replicas = {}
    for role, n in contract.effective_replicas(spec).items():
        c = common.container(spec, role, CONTAINER, image, cmd, code_configmap)
        c["ports"] = [{"name": contract.TF_PORT_NAME, "containerPort": contract.TF_PORT}]
        template = common.pod_template(
            spec,
            role,
            [c],
            code_digest=code_digest,
            code_configmap=code_configmap,
            code_paths=code_paths,
        )
        replicas[role] = common.replica_spec(n, policy, template)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": common.metadata(spec, code_digest),
        "spec": {"runPolicy": common.run_policy(spec), "tfReplicaSpecs": replicas},
    }
