"""Checks of what becomes Kubernetes fields: env names, placement, labels, namespace."""

from __future__ import annotations

from jupyter_ddl.core import contract, names
from jupyter_ddl.core.strategies import Strategy
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
                f"{where}.{key}: {key!r} is not a valid variable name; use letters, digits, "
                "'_', '-' or '.', not starting with a digit"
            )
    for key in set(spec.env) & set(spec.secret_env):
        out.append(f"env.{key}: set both as a plain and a secret variable; keep only one")
    if spec.image is not None and (not spec.image or any(ch.isspace() for ch in spec.image)):
        out.append(
            f"image: {spec.image!r} is not an image reference; write e.g. "
            "registry.example/team/train:1.0, or leave it unset for the framework's base image"
        )
    if spec.command is not None and (not spec.command or not all(spec.command)):
        out.append(
            "command: the command is empty; give a program and its arguments, or leave it unset"
        )
    return out


def operator_env_problems(spec: JobSpec) -> list[str]:
    reserved = contract.operator_env_names(spec)
    if spec.shape.runtime is not None and not spec.shape.trainjob_mpi:
        reserved |= set(contract.TRAINJOB_RESERVED_ENV)
    return [
        f"env.{key}: the operator sets {key} for this job and overrides yours; drop it"
        for key in list(spec.env) + list(spec.secret_env)
        if key in reserved
    ]


def placement_problems(spec: JobSpec, strategy: Strategy) -> list[str]:
    out = _labels("node_selector", spec.node_selector)
    for i, t in enumerate(spec.tolerations):
        f = f"tolerations[{i}]"
        if t.operator not in TOLERATION_OPERATORS:
            out.append(f"{f}.operator: unknown operator {t.operator!r}; use Equal or Exists")
        elif t.operator == "Exists" and t.value:
            out.append(
                f"{f}.value: an Exists toleration takes no value; drop the value or use Equal"
            )
        if t.effect is not None and t.effect not in TAINT_EFFECTS:
            out.append(
                f"{f}.effect: unknown effect {t.effect!r}; choose one of: {', '.join(TAINT_EFFECTS)}"
            )
        if t.toleration_seconds is not None and t.effect != "NoExecute":
            out.append(
                f"{f}.toleration_seconds: only a NoExecute toleration takes seconds; set effect NoExecute or drop it"
            )
        if t.key is None and t.operator != "Exists":
            out.append(
                f"{f}.key: an empty key matches all taints only with operator Exists; give a key"
            )
    paths: set[str] = set()
    for i, v in enumerate(spec.volumes):
        f = f"volumes[{i}]"
        if not names.is_dns1123_subdomain(v.claim_name):
            out.append(
                f"{f}.claim_name: {v.claim_name!r} is not a valid claim name; use the PVC's name"
            )
        if v.name is not None and not names.is_dns1123_label(v.name):
            out.append(
                f"{f}.name: {v.name!r} is not a DNS-1123 label; use lowercase letters, digits, '-'"
            )
        if not v.mount_path.startswith("/"):
            out.append(
                f"{f}.mount_path: {v.mount_path!r} is not absolute; give a path starting with '/'"
            )
        elif v.mount_path in paths:
            out.append(
                f"{f}.mount_path: {v.mount_path} is mounted twice; give each volume its own path"
            )
        paths.add(v.mount_path)
    return out


def metadata_problems(spec: JobSpec, strategy: Strategy) -> list[str]:
    out = _labels("labels", spec.labels)
    for key in spec.annotations:
        if not names.is_label_key(key):
            out.append(
                f"annotations.{key}: {key!r} is not a valid annotation key; use [prefix/]name"
            )
    for field, keys in (("labels", spec.labels), ("annotations", spec.annotations)):
        for key in keys:
            if key.startswith(_RESERVED_PREFIXES):
                out.append(
                    f"{field}.{key}: the {key.split('/')[0]} prefix is reserved; use your own prefix"
                )
    if spec.namespace is not None and not names.is_dns1123_label(spec.namespace):
        out.append(
            f"namespace: {spec.namespace!r} is not a DNS-1123 label; use lowercase letters, digits, '-'"
        )
    return out


def _labels(field: str, labels: dict[str, str]) -> list[str]:
    out = []
    for key, value in labels.items():
        if not names.is_label_key(key):
            out.append(
                f"{field}.{key}: {key!r} is not a valid label key; use [prefix/]name, name ≤ 63 characters"
            )
        if not names.is_label_value(value):
            out.append(
                f"{field}.{key}: value {value!r} is not a valid label value; ≤ 63 letters, digits, '-', '_', '.'"
            )
    return out
