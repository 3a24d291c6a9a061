"""PyTorchJob (kubeflow.org/v1) for the torch strategies (operator-contract.md §1, §2.2)."""

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
    body: dict[str, Any] = {
        # explicit: the operator's default "auto" would make WORLD_SIZE disagree with torchrun
        "nprocPerNode": str(spec.shape.nproc_per_node),
        "runPolicy": common.run_policy(spec),
        str(kind.replica_key): replicas,
    }
    if spec.shape.elastic_bounds is not None:
        lo, hi = spec.shape.elastic_bounds
        body["elasticPolicy"] = {"rdzvBackend": "c10d", "minReplicas": lo, "maxReplicas": hi}
    return {
        "apiVersion": kind.api_version,
        "kind": kind.name,
        "metadata": common.metadata(spec, code_digest),
        "spec": body,
    }
