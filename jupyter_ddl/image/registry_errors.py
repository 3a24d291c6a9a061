"""Registry failures as one-line errors: pure mapping from what happened to what to do.

Messages name the registry and the step, never a credential, a token or a URL query.
"""

from __future__ import annotations

import json

from jupyter_ddl.errors import RegistryError, TransientRegistryError
from jupyter_ddl.i18n import tr


def http_failure(
    host: str, status: int, what: str, *, logged_in: bool, detail: str = ""
) -> RegistryError:
    """The error for an unexpected HTTP status from ``host`` while doing ``what``."""
    extra = f", {detail}" if detail else ""
    if status == 401 and not logged_in:
        return RegistryError(
            tr("registry {host} needs a login (401) for {what}", host=host, what=what),
            hint=tr("run `docker login {host}` or configure a registry secret", host=host),
        )
    if status == 401:
        return RegistryError(
            tr("registry {host} refused the credentials (401) while {what}", host=host, what=what),
            hint=tr("check the user and password (`docker login {host}`)", host=host),
        )
    if status == 403:
        return RegistryError(
            tr("registry {host} denied access (403) while {what}", host=host, what=what),
            hint=tr("the account lacks pull/push permission on that repository"),
        )
    if status == 404:
        return RegistryError(
            tr(
                "not found on registry {host} (404{extra}) while {what}",
                host=host,
                extra=extra,
                what=what,
            ),
            hint=tr("check the image name and tag"),
        )
    if status == 429:
        return RegistryError(
            tr("registry {host} is rate limiting (429) while {what}", host=host, what=what),
            hint=tr("wait a while or log in for a higher limit"),
        )
    cls = TransientRegistryError if status >= 500 else RegistryError
    return cls(
        tr(
            "registry {host} answered HTTP {status}{extra} while {what}",
            host=host,
            status=status,
            extra=extra,
            what=what,
        ),
        hint=tr("try again later; if it persists check the registry logs"),
    )


def tls_failure(host: str, error: Exception) -> RegistryError:
    if "VERIFY_FAILED" in str(error):
        why = tr("certificate not trusted")
    else:
        why = tr("TLS handshake failed")
    return RegistryError(
        tr("TLS to registry {host} failed ({why})", host=host, why=why),
        hint=tr("set registry_ca to its CA file, or list it in insecure_registries"),
    )


def unreachable(host: str, what: str = "connecting") -> RegistryError:
    return TransientRegistryError(
        tr(
            "registry {host} is not reachable while {what} (connection failed)",
            host=host,
            what=what,
        ),
        hint=tr("check the address and that the registry runs"),
    )


def token_failure(host: str, status: int, *, logged_in: bool) -> RegistryError:
    if status in (401, 403) and not logged_in:
        return RegistryError(
            tr(
                "registry {host} needs a login ({status} from its token service)",
                host=host,
                status=status,
            ),
            hint=tr("run `docker login {host}` or configure a registry secret", host=host),
        )
    if status in (401, 403):
        return RegistryError(
            tr(
                "registry {host} refused the credentials ({status} from its token service)",
                host=host,
                status=status,
            ),
            hint=tr("check the user and password (`docker login {host}`)", host=host),
        )
    return RegistryError(
        tr("the token service of registry {host} failed (HTTP {status})", host=host, status=status),
        hint=tr("try again later"),
    )


def retry_after(header: str | None, cap: float = 10.0) -> float | None:
    """Seconds from a ``Retry-After`` header (capped), or None."""
    try:
        return min(float(header or ""), cap)
    except ValueError:
        return None


def error_code(body: bytes) -> str:
    """``MANIFEST_UNKNOWN``-style code from a registry error body, or ""."""
    try:
        errs = json.loads(body).get("errors") or []
        return str(errs[0]["code"]) if errs else ""
    except (ValueError, KeyError, TypeError, AttributeError, IndexError):
        return ""
