"""TFJob (kubeflow.org/v1) for the TensorFlow strategies (operator-contract.md §1, §2.1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..models import JobSpec
from . import common


def build(
    spec: JobSpec,
    *,
    image: str,
    command: Sequence[str],
    code_digest: str | None,
    code_configmap: str | None,
    code_paths: Sequence[str] | None = None,
) -> dict[str, Any]:
    kind = spec.shape.job_kind
    replicas = common.v1_replica_specs(
        spec,
        image=image,
        command=command,
        code_digest=code_digest,
        code_configmap=code_configmap,
        code_paths=code_paths,
    )
    return {
        "apiVersion": kind.api_version,
        "kind": kind.name,
        "metadata": common.metadata(spec, code_digest),
        "spec": {"runPolicy": common.run_policy(spec), str(kind.replica_key): replicas},
    }
