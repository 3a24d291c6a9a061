"""TFJob (kubeflow.org/v1) for the TensorFlow strategies (operator-contract.md §1, §2.1)."""

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
    replicas = common.v1_replica_specs(
        spec,
        container_name=CONTAINER,
        port=(contract.TF_PORT_NAME, contract.TF_PORT),
        default_policy="Never",
        image=image,
        command=command,
        code_digest=code_digest,
        code_configmap=code_configmap,
        code_paths=code_paths,
    )
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": common.metadata(spec, code_digest),
        "spec": {"runPolicy": common.run_policy(spec), "tfReplicaSpecs": replicas},
    }
