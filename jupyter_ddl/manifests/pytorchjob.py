"""PyTorchJob (kubeflow.org/v1) for the torch strategies (operator-contract.md §1, §2.2)."""

from __future__ import annotations

from typing import Any

from jupyter_ddl.manifests import commands, common
from jupyter_ddl.models import JobSpec


def build(spec: JobSpec, code: common.Code) -> dict[str, Any]:
    cmd = commands.launch_command(spec, code.command)
    body: dict[str, Any] = {
        # explicit: the operator's default "auto" would make WORLD_SIZE disagree with torchrun
        "nprocPerNode": str(spec.shape.nproc_per_node),
        "runPolicy": common.run_policy(spec),
        str(spec.shape.job_kind.replica_key): common.replica_specs(spec, code, lambda _: cmd),
    }
    if spec.shape.elastic_bounds is not None:
        lo, hi = spec.shape.elastic_bounds
        body["elasticPolicy"] = {"rdzvBackend": "c10d", "minReplicas": lo, "maxReplicas": hi}
    return common.job_object(spec, code, body)
