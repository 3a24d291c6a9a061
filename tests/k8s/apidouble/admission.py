"""What the API server and the operators' webhooks refuse.

The CRD schema (``tests.support.crd_schema``, strict like ``kubectl --validate=strict``)
is the API server's own check: 422 Invalid with field causes. The operators' rules
(``tests.support.admission``, operator-contract.md §1.2, §4.1) run in their validating
webhooks, which answer 403 ``admission webhook "<name>" denied the request: …`` (see
``policy``). MPIJob v2beta1 has no webhook: its rule breaks become a Warning Event from
the test operator (§3.1).
"""

from __future__ import annotations

import re
from typing import Any

from tests.support.admission import admission_problems
from tests.support.crd_schema import crd_dir, crd_schema, validate_object

from . import errors as E
from .resources import Resource

DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
CONFIGMAP_LIMIT = 1024 * 1024
#: the validating webhooks' names in the operators' manifests
WEBHOOKS = {
    "TFJob": "validator.tfjob.training-operator.kubeflow.org",
    "PyTorchJob": "validator.pytorchjob.training-operator.kubeflow.org",
    "TrainJob": "validator.trainjob.trainer.kubeflow.org",
}


def schema_of(res: Resource) -> dict[str, Any] | None:
    if not res.crd_file:
        return None
    return crd_schema(res.api_version, res.kind, crd_dir() / res.crd_file)


def causes(res: Resource, obj: dict[str, Any]) -> list[tuple[str, str]]:
    """The API server's own validation: (field, message) pairs for a 422."""
    name = obj.get("metadata", {}).get("name", "")
    if res.crd_file:
        body = {k: v for k, v in obj.items() if k != "status"}  # status has its own subresource
        return [_split(p) for p in validate_object(body, crd_dir() / res.crd_file)]
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


def webhook_denial(res: Resource, obj: dict[str, Any]) -> E.ApiError | None:
    """The operator's validating webhook refusing ``obj`` (403), or None."""
    hook = WEBHOOKS.get(res.kind)
    if hook is None or not res.crd_file:
        return None
    body = {k: v for k, v in obj.items() if k != "status"}
    found = admission_problems(body)
    if not found:
        return None
    text = f'admission webhook "{hook}" denied the request: ' + ", ".join(found)
    name = obj.get("metadata", {}).get("name", "")
    return E.ApiError(403, E.status(403, "Forbidden", text, {"name": name, "group": res.group,
                                                             "kind": res.plural}))  # fmt: skip


def _split(problem: str) -> tuple[str, str]:
    path, sep, msg = problem.partition(": ")
    if not sep or " " in path:  # a sentence without a field path
        return ("<root>", problem)
    return (path, msg)
