"""Create and update as the API server runs them: decode (unknown fields pruned, or
refused under ``fieldValidation=Strict``), mutating admission, schema validation (422),
validating admission (operator webhooks, policies, quota; 403), then storage. The HTTP
handlers and the test operators both come through here, so a pod an operator creates
meets the same quota and policies as one a user creates."""

from __future__ import annotations

import random
from typing import Any

from . import errors as E
from .admission import causes, schema_of, webhook_denial
from .fields import unknown_fields
from .policy import Policy
from .resources import Resource
from .store import Store

#: the alphabet of generateName suffixes (k8s.io/apimachinery ``util/rand.String``)
SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def suffix(n: int = 5) -> str:
    return "".join(random.choice(SUFFIX_CHARS) for _ in range(n))


def create_object(store: Store, policy: Policy, res: Resource, ns: str, body: dict[str, Any],
                  field_validation: str = "Ignore") -> tuple[dict[str, Any], list[str]]:  # fmt: skip
    """Store ``body`` as the API server would; returns (stored object, warnings)."""
    body.setdefault("apiVersion", res.api_version)
    body.setdefault("kind", res.kind)
    md = body.setdefault("metadata", {})
    if not md.get("name") and md.get("generateName"):
        md["name"] = f"{md['generateName']}{suffix()}"
    if res.namespaced:
        md["namespace"] = ns
    warnings: list[str] = []
    schema = schema_of(res)
    if schema is not None:
        warnings = unknown_fields(body, schema, field_validation, res.kind, res.version)
    problems = causes(res, body)
    if problems:
        raise E.invalid(res, md.get("name", ""), problems)
    if res.plural == "pods":  # a core type: quantities come back as strings
        for c in (body.get("spec") or {}).get("containers") or []:
            for part in ("limits", "requests"):
                values = (c.get("resources") or {}).get(part) or {}
                values.update({k: str(v) for k, v in values.items()})
    denial = webhook_denial(res, body)
    if denial is not None:
        raise denial
    policy.admit(store, res, body)
    try:
        return store.create(res.rid, body), warnings
    except KeyError:
        raise E.already_exists(res, md["name"]) from None


def update_object(store: Store, res: Resource, cur: dict[str, Any], new: dict[str, Any], sub: str,
                  field_validation: str = "Ignore") -> tuple[dict[str, Any], list[str]]:  # fmt: skip
    warnings: list[str] = []
    if sub == "status":  # the status subresource changes status only
        new = {**cur, "status": new.get("status")}
    elif res.crd_file:  # and the main resource never changes status
        status = cur.get("status")
        schema = schema_of(res)
        if schema is not None:
            warnings = unknown_fields(new, schema, field_validation, res.kind, res.version)
        new["status"] = status
        if new.get("spec") != cur.get("spec"):
            new["metadata"]["generation"] = cur["metadata"].get("generation", 1) + 1
    problems = causes(res, new)
    if problems:
        raise E.invalid(res, cur["metadata"]["name"], problems)
    if sub != "status":
        denial = webhook_denial(res, new)
        if denial is not None:
            raise denial
    return store.replace(res.rid, new), warnings
