"""TFJob (kubeflow.org/v1) for the TensorFlow strategies (operator-contract.md §1, §2.1)."""

from __future__ import annotations

from typing import Any

from jupyter_ddl.manifests import commands, common
from jupyter_ddl.models import JobSpec


def build(spec: JobSpec, code: common.Code) -> dict[str, Any]:
    cmd = commands.launch_command(spec, code.command)
    replicas = common.replica_specs(spec, code, lambda _: cmd)
    body = {"runPolicy": common.run_policy(spec), str(spec.shape.job_kind.replica_key): replicas}
    return common.job_object(spec, code, body)
