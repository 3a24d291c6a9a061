"""How code and secrets reach the pods (pure builders; the backend does the I/O).

Without a registry the bundle travels as a ConfigMap (keys from
``manifests.configmap_key``, mounted read-only at ``manifests.CODE_DIR``), size-checked
against the API server's 1 MiB limit. ``--secret-env`` values are read from the
submitting process's environment into a Secret that the pods reference by key; they
never appear in the job manifest. Both are owned by the job, so deleting the job
deletes them.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from jupyter_ddl.errors import ResourceError, ValidationError
from jupyter_ddl.i18n import tr
from jupyter_ddl.manifests import LABEL_MANAGED, configmap_key, configmap_name, secret_name
from jupyter_ddl.models import CodeBundle, JobSpec

CONFIGMAP_LIMIT = 1024 * 1024
#: room for metadata and base64 of binary files inside the 1 MiB object
_SLACK = 16 * 1024


def configmap(bundle: CodeBundle, job: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """The ConfigMap holding ``bundle``; ResourceError when it would not fit."""
    data: dict[str, str] = {}
    binary: dict[str, str] = {}
    for path, content in sorted(bundle.files.items()):
        try:
            data[configmap_key(path)] = content.decode("utf-8")
        except UnicodeDecodeError:
            binary[configmap_key(path)] = base64.b64encode(content).decode()
    size = sum(len(v.encode()) for v in data.values()) + sum(len(v) for v in binary.values())
    if size + _SLACK > CONFIGMAP_LIMIT:
        raise ResourceError(
            tr(
                "the code bundle is {size} MiB, over the 1 MiB a ConfigMap can hold",
                size=f"{size / 1024 / 1024:.2f}",
            ),
            hint=tr(
                "configure a registry (`%ddl config registry=HOST/REPO`) "
                "to ship the code as an image layer"
            ),
        )
    out: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": configmap_name(job), "labels": {**labels, LABEL_MANAGED: "true"}},
        "data": data,
        "immutable": True,
    }
    if binary:
        out["binaryData"] = binary
    return out


def secret(
    spec: JobSpec, environ: Mapping[str, str], labels: Mapping[str, str]
) -> dict[str, Any] | None:
    """The Secret with every ``spec.secret_env`` value; ValidationError names the unset ones."""
    if not spec.secret_env:
        return None
    missing = [k for k in spec.secret_env if k not in environ]
    if missing:
        raise ValidationError(
            tr(
                "secret-env: {names} not set in the notebook's environment; "
                "set them (os.environ or %env) before submitting",
                names=", ".join(missing),
            )
        )
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": secret_name(spec.name), "labels": {**labels, LABEL_MANAGED: "true"}},
        "data": {k: base64.b64encode(environ[k].encode()).decode() for k in spec.secret_env},
    }


def owner_reference(job: dict[str, Any]) -> dict[str, Any]:
    """An ownerReference to the created job object (its uid is known only then)."""
    md = job["metadata"]
    return {
        "apiVersion": job["apiVersion"],
        "kind": job["kind"],
        "name": md["name"],
        "uid": md["uid"],
        "blockOwnerDeletion": False,
    }
