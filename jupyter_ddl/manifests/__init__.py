"""JobSpec -> the Kubeflow objects the real operators accept (pure, no I/O).

``build_manifests`` is the one entry point: the job object first (TFJob, PyTorchJob,
MPIJob v2beta1 or TrainJob), then a PodGroup where gang scheduling needs one. The
label/annotation constants the Kubernetes backend selects on live in ``common``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jupyter_ddl.core import kinds
from jupyter_ddl.manifests import (
    common,
    mpijob,
    podgroup,
    pytorchjob,
    tfjob,
    trainingruntime,
    trainjob,
)
from jupyter_ddl.manifests.commands import launch_command
from jupyter_ddl.manifests.common import (
    ANNOTATION_CELL,
    ANNOTATION_CODE_DIGEST,
    ANNOTATION_NOTEBOOK,
    ANNOTATION_SPEC,
    ANNOTATION_USER,
    CODE_DIR,
    LABEL_CODE_DIGEST,
    LABEL_MANAGED,
    LABEL_NOTEBOOK,
    LABEL_STRATEGY,
    LABEL_USER,
    MANAGED_SELECTOR,
    PREFIX,
    SCHEDULER_NAMES,
    WORK_DIR,
    configmap_key,
    configmap_name,
    secret_name,
)
from jupyter_ddl.models import JobSpec
from jupyter_ddl.runtime.ddl_runtime import STRATEGY_ENV

_BUILDERS = {
    kinds.TFJOB.name: tfjob.build,
    kinds.PYTORCHJOB.name: pytorchjob.build,
    kinds.MPIJOB.name: mpijob.build,
    kinds.TRAINJOB.name: trainjob.build,
}


def build_manifests(
    spec: JobSpec,
    *,
    image: str,
    command: Sequence[str],
    code_digest: str | None = None,
    code_configmap: str | None = None,
    code_paths: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """The objects to create for ``spec``: the job first, then its PodGroup if any.

    ``command`` is how one process runs the entry point (``["python",
    "/opt/jupyter-ddl/code/main.py"]``); it is wrapped in torchrun/mpirun as the
    strategy needs, and ``spec.command`` replaces it. ``code_configmap`` mounts a
    ConfigMap (keys from ``configmap_key``; ``code_paths`` lists the bundle's files
    so nested paths come back) read-only at ``CODE_DIR``; every replica works in an
    emptyDir at ``WORK_DIR``. The spec is expected to be valid (``validation.validate``).
    """
    code = common.Code(image, command, code_digest, code_configmap, code_paths)
    out = [_BUILDERS[spec.shape.kind](spec, code)]
    if podgroup.needs_podgroup(spec):
        out.append(podgroup.build(spec, code_digest))
    return out


__all__ = [
    "ANNOTATION_CELL",
    "ANNOTATION_CODE_DIGEST",
    "ANNOTATION_NOTEBOOK",
    "ANNOTATION_SPEC",
    "ANNOTATION_USER",
    "CODE_DIR",
    "LABEL_CODE_DIGEST",
    "LABEL_MANAGED",
    "LABEL_NOTEBOOK",
    "LABEL_STRATEGY",
    "LABEL_USER",
    "MANAGED_SELECTOR",
    "PREFIX",
    "SCHEDULER_NAMES",
    "STRATEGY_ENV",
    "WORK_DIR",
    "build_manifests",
    "common",
    "configmap_key",
    "launch_command",
    "configmap_name",
    "secret_name",
    "trainingruntime",
]
