"""Kubernetes API errors -> our one-line errors (cause + next step).

The API server's Status body carries what the user needs: the verb and resource a
403 refused, the field causes of a 422. A 404 on a job kind's URL means its CRD is not
served, so the message names the operator to install. Pure: takes status code and body.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...errors import (
    BackendUnavailable,
    ClusterError,
    DDLError,
    JobConflict,
    JobNotFound,
    PermissionDenied,
    ResourceError,
    ValidationError,
)

#: which operator serves each job kind (operator-contract.md §0, §3, §4)
OPERATORS = {
    "TFJob": "the Kubeflow training operator (kubeflow/trainer v1.9, kubeflow.org/v1)",
    "PyTorchJob": "the Kubeflow training operator (kubeflow/trainer v1.9, kubeflow.org/v1)",
    "MPIJob": "the MPI operator (kubeflow/mpi-operator v0.8, kubeflow.org/v2beta1)",
    "TrainJob": "Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1)",
}

_FORBIDDEN = re.compile(r'cannot (\w+) resource "([^"]+)"(?: subresource "([^"]+)")?')


def parse_body(body: Any) -> dict[str, Any]:
    """The Status object of an error response, or {} when the body is not one."""
    if isinstance(body, bytes):
        body = body.decode(errors="replace")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return {}
    return body if isinstance(body, dict) else {}


def crd_missing(kind: str, group_version: str) -> BackendUnavailable:
    return BackendUnavailable(
        f"the cluster does not serve {kind} ({group_version}): its CRD is not installed",
        hint=f"install {OPERATORS.get(kind, 'the operator for ' + kind)}, or pick another strategy",
    )


def forbidden_message(status: dict[str, Any], verb: str | None, resource: str | None) -> str:
    """``cannot list pods/log in namespace team-a`` from a 403 Status (or our guess)."""
    m = _FORBIDDEN.search(status.get("message") or "")
    if m:
        verb, resource = m[1], m[2] + (f"/{m[3]}" if m[3] else "")
    return f"{verb or 'access'} {resource or (status.get('details') or {}).get('kind', 'resource')}"


def map_api_error(
    code: int,
    body: Any,
    *,
    action: str,
    kind: str | None = None,
    group_version: str | None = None,
    name: str | None = None,
    verb: str | None = None,
    resource: str | None = None,
    namespace: str | None = None,
) -> DDLError:
    """The DDLError for one failed API call; ``action`` says what we were doing."""
    status = parse_body(body)
    message = (
        status.get("message")
        or (body.decode() if isinstance(body, bytes) else str(body or "")).strip()
    )
    if code == 403:
        what = forbidden_message(status, verb, resource)
        where = f" in namespace {namespace}" if namespace else ""
        return PermissionDenied(
            f"{action}: the service account may not {what}{where}",
            hint=f"ask an admin to grant '{what.split(' ')[0]}' on '{what.split(' ', 1)[-1]}' (a Role/RoleBinding)",
        )
    if code == 404:
        if kind and (not status or status.get("reason") != "NotFound"):
            return crd_missing(kind, group_version or "")
        return JobNotFound(
            f"{action}: {name or 'object'} not found", hint="`%ddl list` shows the jobs"
        )
    if code == 409:
        return JobConflict(
            f"{action}: a job named {name!r} exists already" if name else f"{action}: {message}",
            hint="choose another name, or `%ddl delete` the old job",
        )
    if code == 410:
        return ClusterError(
            f"{action}: the watch expired ({message})", hint="retry; the job is re-listed"
        )
    if code == 422:
        causes = (status.get("details") or {}).get("causes") or []
        fields = [f"{c.get('field', '?')}: {c.get('message', '')}" for c in causes] or [message]
        return ValidationError(
            [
                f"{action}: the cluster refused {kind or 'the object'} {name or ''}".rstrip()
                + ": "
                + "; ".join(fields)
            ]
        )
    if code == 400 and "exceeded quota" in message:
        return ResourceError(
            f"{action}: {message}", hint="ask for fewer resources or a larger quota"
        )
    if code in (0, 500, 502, 503, 504):
        return BackendUnavailable(
            f"{action}: the Kubernetes API is unavailable ({message or code})",
            hint="check the cluster connection and retry",
        )
    return ClusterError(f"{action}: the Kubernetes API answered {code}: {message}")


def from_api_exception(exc: Any, **context: Any) -> DDLError:
    """Wrap a ``kubernetes.client.ApiException`` (or urllib3 error) as a DDLError."""
    code = int(getattr(exc, "status", 0) or 0)
    return map_api_error(code, getattr(exc, "body", None) or str(exc), **context)
