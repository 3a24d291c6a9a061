"""Unknown fields in a custom object, as the API server treats them.

The API server prunes every field its CRD's structural schema does not declare (unless
``x-kubernetes-preserve-unknown-fields``). What the client hears depends on the
request's ``fieldValidation``: ``Ignore`` (what the ``kubernetes`` Python client sends
when asked for nothing: no parameter at all) drops them silently and answers 201;
``Warn`` drops them and adds one ``Warning: 299 - "unknown field \"…\""`` header each;
``Strict`` refuses the request with 400 BadRequest, ``<Kind> in version "<v>" cannot
be handled as a <Kind>: strict decoding error: unknown field "<path>", …``
(k8s.io/apiextensions-apiserver ``pkg/registry/customresource``, the CR decoder).
"""

from __future__ import annotations

from typing import Any

from . import errors as E

ROOT_KEEP = {"apiVersion", "kind", "metadata"}


def prune(obj: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Remove undeclared fields from ``obj`` in place; returns their paths."""
    found: list[str] = []
    if isinstance(obj, dict) and schema.get("type") == "object":
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return found
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key in list(obj):
            sub = f"{path}.{key}" if path else key
            if props is not None and key in props:
                found += prune(obj[key], props[key], sub)
            elif isinstance(extra, dict):
                found += prune(obj[key], extra, sub)
            elif extra is True or (props is None and extra is None):
                continue  # a free-form map
            elif not path and key in ROOT_KEEP:
                continue
            else:
                found.append(sub)
                del obj[key]
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(obj):
            found += prune(item, schema["items"], f"{path}[{i}]")
    return found


def unknown_fields(
    obj: dict[str, Any], schema: dict[str, Any], mode: str, kind: str, version: str
) -> list[str]:
    """Prune ``obj``; raise 400 under ``Strict``; return the Warning texts under ``Warn``."""
    body = {k: v for k, v in obj.items() if k != "status"}
    unknown = prune(body, schema)
    obj.clear()
    obj.update(body)
    if not unknown:
        return []
    if mode == "Strict":
        listed = ", ".join(f'unknown field "{u}"' for u in unknown)
        raise E.bad_request(
            f'{kind} in version "{version}" cannot be handled as a {kind}: '
            f"strict decoding error: {listed}"
        )
    if mode == "Warn":
        return [f'unknown field "{u}"' for u in unknown]
    return []
