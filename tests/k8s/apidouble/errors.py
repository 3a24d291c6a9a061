"""Status bodies shaped like the real API server's (k8s.io/apimachinery errors)."""

from __future__ import annotations

from typing import Any

from .resources import Resource


class ApiError(Exception):
    def __init__(self, code: int, body: dict[str, Any] | str) -> None:
        super().__init__(str(body))
        self.code = code
        self.body = body


def status(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details is not None:
        out["details"] = details
    return out


def _gr(res: Resource) -> str:
    return f"{res.plural}.{res.group}" if res.group else res.plural


def not_found(res: Resource, name: str) -> ApiError:
    return ApiError(
        404,
        status(
            404,
            "NotFound",
            f'{_gr(res)} "{name}" not found',
            {"name": name, "group": res.group, "kind": res.plural},
        ),
    )


def page_not_found() -> ApiError:
    # An unknown group/version (CRD not installed) is a plain-text 404, not a Status.
    return ApiError(404, "404 page not found\n")


def already_exists(res: Resource, name: str) -> ApiError:
    return ApiError(
        409,
        status(
            409,
            "AlreadyExists",
            f'{_gr(res)} "{name}" already exists',
            {"name": name, "group": res.group, "kind": res.plural},
        ),
    )


def forbidden(user: str, verb: str, res_name: str, group: str, ns: str, name: str = "") -> ApiError:
    plural, _, sub = res_name.partition("/")
    what = f'resource "{plural}"' + (f' subresource "{sub}"' if sub else "")
    scope = f'in the namespace "{ns}"' if ns else "at the cluster scope"
    subject = f"{plural}{' ' + repr(name).replace(chr(39), chr(34)) if name else ''}"
    msg = (
        f'{subject} is forbidden: User "{user}" cannot {verb} {what} in API group "{group}" {scope}'
    )
    return ApiError(
        403, status(403, "Forbidden", msg, {"name": name, "group": group, "kind": plural})
    )


def invalid(res: Resource, name: str, causes: list[tuple[str, str]]) -> ApiError:
    text = ", ".join(f"{f}: {m}" for f, m in causes)
    return ApiError(
        422,
        status(
            422,
            "Invalid",
            f'{res.kind}.{res.group or "core"} "{name}" is invalid: {text}',
            {
                "name": name,
                "group": res.group,
                "kind": res.kind,
                "causes": [
                    {"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes
                ],
            },
        ),
    )


def gone(since: int, current: int) -> dict[str, Any]:
    return status(410, "Expired", f"too old resource version: {since} ({current})")


def bad_request(message: str) -> ApiError:
    return ApiError(400, status(400, "BadRequest", message))
