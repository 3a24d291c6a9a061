"""Checks of what becomes Kubernetes fields: env names, placement, labels, namespace."""

from __future__ import annotations

from jupyter_ddl.core import contract, names
from jupyter_ddl.core.strategies import Strategy
from jupyter_ddl.i18n import tr
from jupyter_ddl.models import JobSpec

_RESERVED_PREFIXES = ("jupyter-ddl.io/", "training.kubeflow.org/", "trainer.kubeflow.org/")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def env_problems(spec: JobSpec, strategy: Strategy) -> list[str]:
    out = []
    for key in list(spec.env) + list(spec.secret_env):
        where = "secret_env" if key in spec.secret_env and key not in spec.env else "env"
        if not names.is_env_name(key):
            out.append(
                tr(
                    "{where}.{key}: {key!r} is not a valid variable name; use letters, digits, "
                    "'_', '-' or '.', not starting with a digit",
                    where=where,
                    key=key,
                )
            )
    for key in set(spec.env) & set(spec.secret_env):
        out.append(
            tr("env.{key}: set both as a plain and a secret variable; keep only one", key=key)
        )
    if spec.image is not None and (not spec.image or any(ch.isspace() for ch in spec.image)):
        out.append(
            tr(
                "image: {image!r} is not an image reference; write e.g. "
                "registry.example/team/train:1.0, or leave it unset for the framework's base image",
                image=spec.image,
            )
        )
    if spec.command is not None and (not spec.command or not all(spec.command)):
        out.append(
            tr("command: the command is empty; give a program and its arguments, or leave it unset")
        )
    return out


def operator_env_problems(spec: JobSpec) -> list[str]:
    reserved = contract.operator_env_names(spec)
    if spec.shape.runtime is not None and not spec.shape.trainjob_mpi:
        reserved |= set(contract.TRAINJOB_RESERVED_ENV)
    return [
        tr("env.{key}: the operator sets {key} for this job and overrides yours; drop it", key=key)
        for key in list(spec.env) + list(spec.secret_env)
        if key in reserved
    ]


def placement_problems(spec: JobSpec, strategy: Strategy) -> list[str]:
    out = _labels("node_selector", spec.node_selector)
    for i, t in enumerate(spec.tolerations):
        f = f"tolerations[{i}]"
        if t.operator not in TOLERATION_OPERATORS:
            out.append(
                tr(
                    "{field}.operator: unknown operator {operator!r}; use Equal or Exists",
                    field=f,
                    operator=t.operator,
                )
            )
        elif t.operator == "Exists" and t.value:
            out.append(
                tr(
                    "{field}.value: an Exists toleration takes no value; "
                    "drop the value or use Equal",
                    field=f,
                )
            )
        if t.effect is not None and t.effect not in TAINT_EFFECTS:
            out.append(
                tr(
                    "{field}.effect: unknown effect {effect!r}; choose one of: {effects}",
                    field=f,
                    effect=t.effect,
                    effects=", ".join(TAINT_EFFECTS),
                )
            )
        if t.toleration_seconds is not None and t.effect != "NoExecute":
            out.append(
                tr(
                    "{field}.toleration_seconds: only a NoExecute toleration takes seconds; "
                    "set effect NoExecute or drop it",
                    field=f,
                )
            )
        if t.key is None and t.operator != "Exists":
            out.append(
                tr(
                    "{field}.key: an empty key matches all taints only with operator Exists; "
                    "give a key",
                    field=f,
                )
            )
    paths: set[str] = set()
    for i, v in enumerate(spec.volumes):
        f = f"volumes[{i}]"
        if not names.is_dns1123_subdomain(v.claim_name):
            out.append(
                tr(
                    "{field}.claim_name: {claim!r} is not a valid claim name; use the PVC's name",
                    field=f,
                    claim=v.claim_name,
                )
            )
        if v.name is not None and not names.is_dns1123_label(v.name):
            out.append(
                tr(
                    "{field}.name: {name!r} is not a DNS-1123 label; "
                    "use lowercase letters, digits, '-'",
                    field=f,
                    name=v.name,
                )
            )
        if not v.mount_path.startswith("/"):
            out.append(
                tr(
                    "{field}.mount_path: {path!r} is not absolute; give a path starting with '/'",
                    field=f,
                    path=v.mount_path,
                )
            )
        elif v.mount_path in paths:
            out.append(
                tr(
                    "{field}.mount_path: {path} is mounted twice; give each volume its own path",
                    field=f,
                    path=v.mount_path,
                )
            )
        paths.add(v.mount_path)
    return out


def metadata_problems(spec: JobSpec, strategy: Strategy) -> list[str]:
    out = _labels("labels", spec.labels)
    for key in spec.annotations:
        if not names.is_label_key(key):
            out.append(
                tr(
                    "annotations.{key}: {key!r} is not a valid annotation key; use [prefix/]name",
                    key=key,
                )
            )
    for field, keys in (("labels", spec.labels), ("annotations", spec.annotations)):
        for key in keys:
            if key.startswith(_RESERVED_PREFIXES):
                out.append(
                    tr(
                        "{field}.{key}: the {prefix} prefix is reserved; use your own prefix",
                        field=field,
                        key=key,
                        prefix=key.split("/")[0],
                    )
                )
    if spec.namespace is not None and not names.is_dns1123_label(spec.namespace):
        out.append(
            tr(
                "namespace: {namespace!r} is not a DNS-1123 label; "
                "use lowercase letters, digits, '-'",
                namespace=spec.namespace,
            )
        )
    return out


def _labels(field: str, labels: dict[str, str]) -> list[str]:
    out = []
    for key, value in labels.items():
        if not names.is_label_key(key):
            out.append(
                tr(
                    "{field}.{key}: {key!r} is not a valid label key; "
                    "use [prefix/]name, name ≤ 63 characters",
                    field=field,
                    key=key,
                )
            )
        if not names.is_label_value(value):
            out.append(
                tr(
                    "{field}.{key}: value {value!r} is not a valid label value; "
                    "≤ 63 letters, digits, '-', '_', '.'",
                    field=field,
                    key=key,
                    value=value,
                )
            )
    return out
