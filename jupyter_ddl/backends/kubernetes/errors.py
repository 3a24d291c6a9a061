"""Kubernetes API errors -> our one-line errors (cause + next step).

The API server's Status body carries what the user needs: the verb and resource a
403 refused, the field causes of a 422. A 404 on a job kind's URL means its CRD is not
served, so the message names the operator to install. A 401 means the credentials
expired. Transport failures (urllib3: refused, timeout, TLS, proxy) become one line
naming the server and the cause instead of urllib3's retry chain. Pure: takes status
code and body, or the exception object.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...errors import (
    BackendUnavailable,
    ClusterError,
    ClusterUnauthorized,
    ClusterUnreachable,
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
    if code == 401:
        return ClusterUnauthorized(
            f"kubernetes: {action}: the cluster refused the credentials (401 Unauthorized)",
            hint="the token may have expired: log in to the cluster again",
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


def _reason_chain(exc: BaseException) -> list[BaseException]:
    """``exc``, then what it wraps: urllib3's ``reason``, ``__cause__``, ``__context__``."""
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in chain and len(chain) < 8:
        chain.append(cur)
        reason = getattr(cur, "reason", None)
        cur = reason if isinstance(reason, BaseException) else (cur.__cause__ or cur.__context__)
    return chain


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def transport_reason(exc: BaseException, *, connect_s: float, read_s: float | None) -> str:
    """Why a request never got an answer, in a few words: ``connection refused``,
    ``no connection within 3 s``, ``TLS failed: certificate verify failed…``."""
    names = [type(e).__name__ for e in _reason_chain(exc)]
    texts = " | ".join(str(e) for e in _reason_chain(exc))
    if "ConnectTimeoutError" in names or "ConnectTimeout" in names:
        return f"no connection within {connect_s:g} s"
    if "ReadTimeoutError" in names or "TimeoutError" in names or "timeout" in names:
        after = f"{read_s:g} s" if read_s else "the read timeout"
        return f"no answer within {after}"
    if "ProxyError" in names:
        return f"the proxy failed ({_first_line(str(_reason_chain(exc)[-1]))})"
    if "SSLError" in names or "SSLCertVerificationError" in names:
        chain = _reason_chain(exc)
        verify = next((e for e in chain if type(e).__name__ == "SSLCertVerificationError"), None)
        why = getattr(verify, "verify_message", None)
        if why:
            return f"TLS failed (certificate verify failed: {why})"
        return f"TLS failed ({_first_line(str(chain[-1]))})"
    if "ConnectionRefusedError" in names or "Connection refused" in texts:
        return "connection refused"
    if "NameResolutionError" in names or "gaierror" in names or "Name or service" in texts:
        return "unknown host name"
    if "ConnectionResetError" in names or "RemoteDisconnected" in names:
        return "the connection was closed by the other side"
    return _first_line(f"{type(_reason_chain(exc)[-1]).__name__}: {_reason_chain(exc)[-1]}")


def unreachable(host: str, reason: str) -> ClusterUnreachable:
    return ClusterUnreachable(
        f"kubernetes: not reachable at {host}: {reason}",
        hint="check the cluster address, VPN or proxy",
    )


def from_api_exception(exc: Any, **context: Any) -> DDLError:
    """Wrap a ``kubernetes.client.ApiException`` (or urllib3 error) as a DDLError."""
    code = int(getattr(exc, "status", 0) or 0)
    return map_api_error(code, getattr(exc, "body", None) or str(exc), **context)
