"""Pure helpers for registry authentication: challenges, scopes, header values.

The HTTP itself (the token request) happens in ``registry.py``; here only parsing
and formatting, so the rules are easy to test.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field

from jupyter_ddl.image.credentials import Credential

_PARAM = re.compile(r'([A-Za-z_]+)=(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


@dataclass(frozen=True)
class Challenge:
    """One ``WWW-Authenticate`` challenge: ``Bearer realm=...,service=...,scope=...``."""

    scheme: str  # "basic" | "bearer" (lower case)
    params: dict[str, str] = field(default_factory=dict)

    @property
    def realm(self) -> str | None:
        return self.params.get("realm")


def parse_challenge(header: str | None) -> Challenge | None:
    """Parse the first challenge of a ``WWW-Authenticate`` header; None when absent."""
    if not header:
        return None
    scheme, _, rest = header.strip().partition(" ")
    params = {
        m.group(1).lower(): m.group(2) if m.group(2) is not None else m.group(3)
        for m in _PARAM.finditer(rest)
    }
    return Challenge(scheme.lower(), params)


def repo_scope(repository: str, actions: str) -> str:
    """``repository:team/app:pull,push``."""
    return f"repository:{repository}:{actions}"


def merge_scopes(scopes: set[str] | frozenset[str]) -> list[str]:
    """One scope per repository, actions united and sorted, in a stable order."""
    by_repo: dict[tuple[str, str], set[str]] = {}
    for s in scopes:
        kind, _, rest = s.partition(":")
        name, _, actions = rest.rpartition(":")
        by_repo.setdefault((kind, name), set()).update(a for a in actions.split(",") if a)
    return [f"{k}:{n}:{','.join(sorted(a))}" for (k, n), a in sorted(by_repo.items())]


def basic_header(cred: Credential) -> str:
    raw = f"{cred.username}:{cred.password}".encode()
    return "Basic " + base64.b64encode(raw).decode()


@dataclass(frozen=True)
class TokenRequest:
    """How to ask a token service for ``scopes`` (GET with basic auth, or an OAuth2
    refresh-token POST when the credential is an identity token)."""

    method: str
    params: list[tuple[str, str]]
    data: dict[str, str] | None
    headers: dict[str, str]


def token_request(ch: Challenge, scopes: list[str], cred: Credential | None) -> TokenRequest:
    service = ch.params.get("service", "")
    if cred and cred.identity_token:
        data = {
            "grant_type": "refresh_token",
            "refresh_token": cred.identity_token,
            "service": service,
            "scope": " ".join(scopes),
            "client_id": "jupyter-ddl",
        }
        return TokenRequest("POST", [], data, {})
    params = [("service", service)] + [("scope", s) for s in scopes]
    headers = {"Authorization": basic_header(cred)} if cred else {}
    return TokenRequest("GET", params, None, headers)
