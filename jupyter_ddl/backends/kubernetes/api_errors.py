"""Kubernetes API errors -> our one-line errors (cause + next step).

The API server's Status body carries what the user needs: the verb and resource an
RBAC 403 refused, the field causes of a 422, the unknown field of a strict 400. Not
every 403 is RBAC: an admission webhook (``admission webhook "x" denied the request:
…``), a quota (``exceeded quota: …``) or PodSecurity answer 403 too, and their words
are shown as they are. A 404 on a job kind's URL means its CRD is not served, so the
message names the operator to install. A 401 means the credentials expired. Transport
failures (urllib3: refused, timeout, TLS, proxy) become one line naming the server and
the cause instead of urllib3's retry chain. Pure: takes status code and body, or the
exception object.
"""

from __future__ import annotations

import json
import re
from typing import Any

from jupyter_ddl.core.kinds import Kind
from jupyter_ddl.errors import (
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
from jupyter_ddl.i18n import tr

# an RBAC refusal, as the API server's authorizer words it
_FORBIDDEN = re.compile(r'cannot (\w+) resource "([^"]+)"(?: subresource "([^"]+)")?')
_UNKNOWN_FIELD = re.compile(r'unknown field "([^"]+)"')


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


def crd_missing(kind: Kind) -> BackendUnavailable:
    return BackendUnavailable(
        tr(
            "the cluster does not serve {kind} ({api}): its CRD is not installed",
            kind=kind,
            api=kind.api_version,
        ),
        hint=tr("install {operator}, or pick another strategy", operator=kind.operator),
    )


def one_line(text: str) -> str:
    """A server's message on one line (webhooks may answer with several)."""
    return " ".join(text.split())


def unknown_fields(message: str) -> list[str]:
    """The fields a strict decode refused (``strict decoding error: unknown field "x"``)."""
    return _UNKNOWN_FIELD.findall(message)


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
    kind: Kind | None = None,
    name: str | None = None,
    verb: str | None = None,
    resource: str | None = None,
    namespace: str | None = None,
    written_for: str | None = None,
) -> DDLError:
    """The DDLError for one failed API call; ``action`` says what we were doing.
    ``written_for`` names what an object was written for (``Trainer v2.3.0, from the
    cluster's ConfigMap``), which a strict decode's unknown field contradicts."""
    status = parse_body(body)
    message = one_line(
        status.get("message")
        or (body.decode() if isinstance(body, bytes) else str(body or "")).strip()
    )
    if code == 401:
        return ClusterUnauthorized(
            tr(
                "kubernetes: {action}: the cluster refused the credentials (401 Unauthorized)",
                action=action,
            ),
            hint=tr("the token may have expired: log in to the cluster again"),
        )
    if code == 403:
        return forbidden(status, message, action, verb, resource, namespace)
    if code == 404:
        if kind and (not status or status.get("reason") != "NotFound"):
            return crd_missing(kind)
        return JobNotFound(
            tr("{action}: {name} not found", action=action, name=name or "object"),
            hint=tr("`%ddl list` shows the jobs"),
        )
    if code == 409:
        return JobConflict(
            tr("{action}: a job named {name!r} exists already", action=action, name=name)
            if name
            else f"{action}: {message}",
            hint=tr("choose another name, or `%ddl delete` the old job"),
        )
    if code == 410:
        return ClusterError(
            tr("{action}: the watch expired ({message})", action=action, message=message),
            hint=tr("retry; the job is re-listed"),
        )
    if code == 422:
        causes = (status.get("details") or {}).get("causes") or []
        fields = [f"{c.get('field', '?')}: {c.get('message', '')}" for c in causes] or [message]
        return ValidationError(
            [
                tr(
                    "{action}: the cluster refused {what}: {causes}",
                    action=action,
                    what=f"{kind or tr('the object')} {name or ''}".rstrip(),
                    causes="; ".join(fields),
                )
            ]
        )
    if code == 400 and unknown_fields(message):
        what = f"{kind} " if kind else ""
        unknown = ", ".join(unknown_fields(message))
        return ValidationError(
            tr(
                "{action}: the cluster's {what}CRD has no field {unknown}",
                action=action,
                what=what,
                unknown=unknown,
            )
            + (
                tr(" (the object was written for {written_for})", written_for=written_for)
                if written_for
                else ""
            )
            + (f"; {kind.mismatch_hint}" if kind else "")
        )
    if code == 400 and "exceeded quota" in message:
        return ResourceError(
            f"{action}: {message}", hint=tr("ask for fewer resources or a larger quota")
        )
    if code in (0, 500, 502, 503, 504):
        return BackendUnavailable(
            tr(
                "{action}: the Kubernetes API is unavailable ({why})",
                action=action,
                why=message or code,
            ),
            hint=tr("check the cluster connection and retry"),
        )
    return ClusterError(
        tr(
            "{action}: the Kubernetes API answered {code}: {message}",
            action=action,
            code=code,
            message=message,
        )
    )


def forbidden(
    status: dict[str, Any],
    message: str,
    action: str,
    verb: str | None,
    resource: str | None,
    namespace: str | None,
) -> DDLError:
    """A 403: an RBAC refusal names the verb and resource and asks for a Role; an
    admission webhook, a quota or PodSecurity is shown in its own words (their 403 is
    no missing permission, and no Role would help)."""
    rbac = _FORBIDDEN.search(message) or not message
    if not rbac:
        if "exceeded quota" in message:
            return ResourceError(
                f"{action}: {message}", hint=tr("ask for fewer resources or a larger quota")
            )
        return PermissionDenied(
            f"{action}: {message}",
            hint=tr(
                "the cluster's admission policy refused it: change the job as it asks, "
                "or ask the cluster's admins about the policy"
            ),
        )
    what = forbidden_message(status, verb, resource)
    verb_shown, _, resource_shown = what.partition(" ")
    if namespace:
        said = tr(
            "{action}: the service account may not {what} in namespace {namespace}",
            action=action,
            what=what,
            namespace=namespace,
        )
    else:
        said = tr("{action}: the service account may not {what}", action=action, what=what)
    return PermissionDenied(
        said,
        hint=tr(
            "ask an admin to grant '{verb}' on '{resource}' (a Role/RoleBinding)",
            verb=verb_shown,
            resource=resource_shown or verb_shown,
        ),
    )


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
        return tr("no connection within {seconds} s", seconds=f"{connect_s:g}")
    if "ReadTimeoutError" in names or "TimeoutError" in names or "timeout" in names:
        if read_s:
            return tr("no answer within {seconds} s", seconds=f"{read_s:g}")
        return tr("no answer within the read timeout")
    if "ProxyError" in names:
        return tr("the proxy failed ({why})", why=_first_line(str(_reason_chain(exc)[-1])))
    if "SSLError" in names or "SSLCertVerificationError" in names:
        chain = _reason_chain(exc)
        verify = next((e for e in chain if type(e).__name__ == "SSLCertVerificationError"), None)
        why = getattr(verify, "verify_message", None)
        if why:
            return tr("TLS failed (certificate verify failed: {why})", why=why)
        return tr("TLS failed ({why})", why=_first_line(str(chain[-1])))
    if "ConnectionRefusedError" in names or "Connection refused" in texts:
        return tr("connection refused")
    if "NameResolutionError" in names or "gaierror" in names or "Name or service" in texts:
        return tr("unknown host name")
    if "ConnectionResetError" in names or "RemoteDisconnected" in names:
        return tr("the connection was closed by the other side")
    return _first_line(f"{type(_reason_chain(exc)[-1]).__name__}: {_reason_chain(exc)[-1]}")


def unreachable(host: str, reason: str) -> ClusterUnreachable:
    return ClusterUnreachable(
        tr("kubernetes: not reachable at {host}: {reason}", host=host, reason=reason),
        hint=tr("check the cluster address, VPN or proxy"),
    )


def from_api_exception(exc: Any, **context: Any) -> DDLError:
    """Wrap a ``kubernetes.client.ApiException`` (or urllib3 error) as a DDLError."""
    code = int(getattr(exc, "status", 0) or 0)
    return map_api_error(code, getattr(exc, "body", None) or str(exc), **context)
