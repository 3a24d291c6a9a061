"""Strict validation of custom objects against the real CRDs in ``tests/data/crds/``.

``validate_object(obj)`` finds the CRD by apiVersion/kind and checks the object the way
an API server with field validation ``Strict`` does on create: unknown fields are
errors (every object schema becomes ``additionalProperties: false`` unless it carries
``x-kubernetes-preserve-unknown-fields`` or is a map), ``x-kubernetes-int-or-string``
accepts both, ``nullable`` accepts null, list-type ``map``/``set`` items must be
unique, root ``metadata`` is checked as an ObjectMeta, and the CEL rules these CRDs use
on create (name format/length, ``in [...]``, ``matches``) are evaluated. Transition
rules (``self == oldSelf``) need an old object and are skipped.

Used by the manifest tests and by the Kubernetes API double. The CRD folder is
``$JUPYTER_DDL_CRD_DIR`` or ``tests/data/crds`` (see its SOURCES.md).
"""

from __future__ import annotations

import copy
import functools
import os
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml

_OBJECT_META: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "generateName": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "ownerReferences": {"type": "array", "items": {"type": "object"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "uid": {"type": "string"},
        "resourceVersion": {"type": "string"},
        "generation": {"type": "integer"},
        "creationTimestamp": {"type": ["string", "null"]},
        "deletionTimestamp": {"type": ["string", "null"]},
        "deletionGracePeriodSeconds": {"type": "integer"},
        "managedFields": {"type": "array"},
        "selfLink": {"type": "string"},
    },
}

_NO_CHECK = {"description", "default", "format", "example"}


def crd_dir() -> Path:
    """The operators' CRD schemas; a missing folder is an error, never an empty catalog."""
    env = os.environ.get("JUPYTER_DDL_CRD_DIR")
    path = Path(env) if env else Path(__file__).resolve().parents[1] / "data" / "crds"
    if not any(path.glob("*.yaml")):
        raise FileNotFoundError(
            f"no CRD schemas in {path}: restore tests/data/crds from git "
            "or point JUPYTER_DDL_CRD_DIR at a folder of CRD YAML files"
        )
    return path


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: ~100x faster on 600 kB CRDs


def _files() -> dict[tuple[str, str], Path]:
    """(apiVersion, kind) -> file, from the ``<group>_<Kind>_<version>.yaml`` names."""
    out = {}
    for path in sorted(crd_dir().glob("*.yaml")):
        group, kind, version = path.stem.rsplit("_", 2)
        out[(f"{group}/{version}", kind)] = path
    return out


@functools.cache
def _crd(api_version: str, kind: str, path: Path | None = None) -> dict[str, Any] | None:
    """{"schema": openAPIV3Schema, "scope", "plural", "group", "version", "file"} or None;
    from ``path`` when given (e.g. one Trainer release's copy), else the folder's file."""
    path = path or _files().get((api_version, kind))
    if path is None:
        return None
    spec = yaml.load(path.read_text(), Loader=_Loader)["spec"]
    for version in spec["versions"]:
        if f"{spec['group']}/{version['name']}" == api_version and version.get("served", True):
            return {
                "schema": version["schema"]["openAPIV3Schema"],
                "scope": spec.get("scope", "Namespaced"),
                "plural": spec["names"]["plural"],
                "group": spec["group"],
                "version": version["name"],
                "file": path.name,
            }
    return None


def known_kinds() -> list[tuple[str, str]]:
    """Every (apiVersion, kind) a CRD file in the folder is named for."""
    return sorted(_files())


def crd_info(api_version: str, kind: str) -> dict[str, Any] | None:
    """Scope, plural, group and version of a served CRD, or None."""
    info = _crd(api_version, kind)
    return None if info is None else {k: v for k, v in info.items() if k != "schema"}


def strict_schema(node: dict[str, Any], *, root: bool = True) -> dict[str, Any]:
    """The CRD structural schema turned into a strict JSON Schema (a new dict)."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _NO_CHECK or key.startswith("x-kubernetes"):
            continue
        if key == "properties":
            out[key] = {k: strict_schema(v, root=False) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = strict_schema(value, root=False)
        elif key in ("anyOf", "allOf", "oneOf"):
            # structural schemas only use these for value checks, not for fields
            out[key] = [{k: v for k, v in s.items() if k not in ("properties",)} for s in value]
        else:
            out[key] = copy.deepcopy(value)
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    out.pop("nullable", None)
    preserve = node.get("x-kubernetes-preserve-unknown-fields")
    if node.get("type") == "object" and not preserve and "additionalProperties" not in node:
        out["additionalProperties"] = False
    if root and "properties" in out:
        out["properties"]["metadata"] = _OBJECT_META
        out["properties"]["apiVersion"] = {"type": "string"}
        out["properties"]["kind"] = {"type": "string"}
    return out


def crd_schema(api_version: str, kind: str, path: Path | None = None) -> dict[str, Any] | None:
    """The openAPIV3Schema of a served CRD version (from ``path`` when given), or None."""
    info = _crd(api_version, kind, path)
    return None if info is None else info["schema"]


@functools.cache
def _validator(
    api_version: str, kind: str, path: Path | None = None
) -> jsonschema.protocols.Validator:
    info = _crd(api_version, kind, path)
    assert info is not None
    schema = strict_schema(info["schema"])
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    return cls(schema)


def validate_object(obj: dict[str, Any], crd_file: Path | None = None) -> list[str]:
    """Every problem of ``obj`` against its CRD, each ``<path>: <message>``; [] if valid.
    ``crd_file`` picks one release's copy of the CRD instead of the folder's."""
    api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
    info = _crd(api_version, kind, crd_file)
    if info is None:
        known = ", ".join(f"{a} {k}" for a, k in known_kinds())
        return [f"<root>: no CRD serves apiVersion {api_version!r} kind {kind!r}; known: {known}"]
    errors = [
        f"{_path(e.absolute_path)}: {e.message}"
        for e in sorted(
            _validator(api_version, kind, crd_file).iter_errors(obj),
            key=lambda e: list(map(str, e.path)),
        )
    ]
    errors += _extensions(info["schema"], obj, "")
    return errors


def _path(parts: Any) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out.lstrip(".") or "<root>"


# -- the x-kubernetes-* rules JSON Schema cannot express ------------------------------
def _extensions(schema: dict[str, Any], value: Any, path: str) -> list[str]:
    errors: list[str] = []
    for rule in schema.get("x-kubernetes-validations", []):
        ok = _cel(rule["rule"], value)
        if ok is False:
            errors.append(f"{path or '<root>'}: {rule.get('message') or rule['rule']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, sub in value.items():
            sub_schema = props.get(key) or (extra if isinstance(extra, dict) else None)
            if sub_schema is not None:
                errors += _extensions(sub_schema, sub, f"{path}.{key}".lstrip("."))
    elif isinstance(value, list):
        errors += _list_rules(schema, value, path)
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                errors += _extensions(items, item, f"{path}[{i}]")
    return errors


def _list_rules(schema: dict[str, Any], value: list[Any], path: str) -> list[str]:
    kind = schema.get("x-kubernetes-list-type")
    if kind == "map":
        keys = schema.get("x-kubernetes-list-map-keys", [])
        seen = [tuple(repr(item.get(k)) for k in keys) for item in value if isinstance(item, dict)]
        if len(seen) != len(set(seen)):
            return [f"{path}: duplicate entries for list-map keys {keys}"]
    if kind == "set" and len({repr(v) for v in value}) != len(value):
        return [f"{path}: duplicate entries in a list-type set"]
    return []


_MATCHES = re.compile(r"^(self(?:\.\w+)*)\.matches\('(.*)'\)$")
_SIZE = re.compile(r"^size\((self(?:\.\w+)*)\)\s*(<=|<|>=|>|==)\s*(\d+)$")
_IN = re.compile(r"^(self(?:\.\w+)*) in \[(.*)\]$")
_EQ = re.compile(r"^(self(?:\.\w+)*) == '(.*)'$")


def _cel(rule: str, value: Any) -> bool | None:
    """Evaluate the few CEL forms these CRDs use on create; None = not evaluated."""
    if "oldSelf" in rule or rule.startswith("has("):
        return None
    terms = [t.strip() for t in rule.split("||")]
    results = [_cel_term(t, value) for t in terms]
    if any(r is None for r in results):
        return None
    return any(results)


def _cel_term(term: str, value: Any) -> bool | None:
    if m := _MATCHES.match(term):
        v = _select(value, m.group(1))
        return isinstance(v, str) and re.search(m.group(2), v) is not None
    if m := _SIZE.match(term):
        v = _select(value, m.group(1))
        n, limit = len(v) if v is not None else 0, int(m.group(3))
        return {
            "<=": n <= limit,
            "<": n < limit,
            ">=": n >= limit,
            ">": n > limit,
            "==": n == limit,
        }[m.group(2)]
    if m := _IN.match(term):
        choices = [c.strip().strip("'") for c in m.group(2).split(",")]
        return _select(value, m.group(1)) in choices
    if m := _EQ.match(term):
        return _select(value, m.group(1)) == m.group(2)
    return None


def _select(value: Any, expr: str) -> Any:
    for part in expr.split(".")[1:]:
        value = value.get(part) if isinstance(value, dict) else None
    return value
