"""What the API server and the operators' webhooks refuse, as (field, message) causes:
the CRD schema (``tests.support.crd_schema``, strict like ``kubectl --validate=strict``)
and the webhook rules (``tests.support.admission``, operator-contract.md §1.2, §4.1). MPIJob v2beta1
has no webhook: its rule breaks become a Warning Event from the test operator (§3.1)."""

from __future__ import annotations

import re
from typing import Any

from tests.support.admission import admission_problems
from tests.support.crd_schema import validate_object

from .resources import Resource

DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
CONFIGMAP_LIMIT = 1024 * 1024


def causes(res: Resource, obj: dict[str, Any]) -> list[tuple[str, str]]:
    name = obj.get("metadata", {}).get("name", "")
    if res.crd_file:
        body = {k: v for k, v in obj.items() if k != "status"}  # status has its own subresource
        found = validate_object(body)
        if not (res.kind == "MPIJob" and res.version == "v2beta1"):
            found += admission_problems(body)
        return [_split(p) for p in found]
    out: list[tuple[str, str]] = []
    if not DNS1123.match(name) or len(name) > 253:
        out.append(
            (
                "metadata.name",
                f"Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'",
            )
        )
    if res.kind in ("ConfigMap", "Secret"):
        size = sum(
            len(str(v))
            for k in ("data", "binaryData", "stringData")
            for v in (obj.get(k) or {}).values()
        )
        if size > CONFIGMAP_LIMIT:
            out.append(("data", f"Too long: must have at most {CONFIGMAP_LIMIT} bytes"))
    return out


def _split(problem: str) -> tuple[str, str]:
    path, sep, msg = problem.partition(": ")
    if not sep or " " in path:  # a sentence without a field path
        return ("<root>", problem)
    return (path, msg)
