"""A pod's `imagePullSecrets` as the kubelet reads them, and the registry's login.

The keyring (kubernetes v1.36.3 `pkg/credentialprovider/secrets/secrets.go` and
`keyring.go`): a Secret of type `kubernetes.io/dockerconfigjson` (key
`.dockerconfigjson`, `{"auths": {KEY: ...}}`) or `kubernetes.io/dockercfg` (key
`.dockercfg`, `{KEY: ...}`); each entry's `auth` (base64 `user:password`) or
`username`/`password`. A KEY loses its scheme and a leading `/v1/` or `/v2/`; it matches
an image when the host (each dot-separated part a glob), the port and the path prefix
agree; more specific keys are tried first, and every credential that matches is tried
in turn until a pull succeeds. A Secret that cannot be read is passed over (the kubelet
warns and pulls without it).

The login (the registry token flow containerd follows): a request answered 401 with
`WWW-Authenticate: Basic` is sent again with the credential; with `Bearer realm=...,
service=...,scope=...` a token is asked of the realm (with the credential, if any) and
the request sent again with it.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from .api import ApiError

Credential = tuple[str, str]  # user, password
Fetch = Callable[[str, str], "dict[str, Any] | None"]


def _key(raw: str) -> str:
    key = raw.split("://", 1)[-1]
    host, _, path = key.partition("/")
    path = "/" + path
    if path.startswith(("/v1/", "/v2/")):
        path = path[3:]
    path = path.rstrip("/")
    return host + path if path and path != "/" else host


def _credential(entry: dict[str, Any]) -> Credential | None:
    if entry.get("auth"):
        try:
            user, sep, password = base64.b64decode(entry["auth"]).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None
        return (user, password) if sep else None
    if entry.get("username") is not None:
        return str(entry["username"]), str(entry.get("password") or "")
    return None


def keyring(pod: dict[str, Any], fetch: Fetch) -> list[tuple[str, Credential]]:
    """(key, credential) from the pod's pull secrets, most specific key first."""
    found: list[tuple[str, Credential]] = []
    for ref in pod.get("spec", {}).get("imagePullSecrets") or []:
        try:
            secret = fetch("secrets", str(ref.get("name") or ""))
        except (ApiError, OSError):
            secret = None
        data = (secret or {}).get("data") or {}
        kind = (secret or {}).get("type")
        try:
            if kind == "kubernetes.io/dockerconfigjson" and data.get(".dockerconfigjson"):
                auths = json.loads(base64.b64decode(data[".dockerconfigjson"])).get("auths") or {}
            elif kind == "kubernetes.io/dockercfg" and data.get(".dockercfg"):
                auths = json.loads(base64.b64decode(data[".dockercfg"]))
            else:
                continue
        except (binascii.Error, ValueError, AttributeError):
            continue  # a malformed secret is passed over, as one that is missing
        for raw, entry in (auths or {}).items():
            cred = _credential(entry) if isinstance(entry, dict) else None
            if cred is not None:
                found.append((_key(str(raw)), cred))
    return sorted(found, key=lambda kc: kc[0], reverse=True)


def _matches(key: str, image: str) -> bool:
    k_host, _, k_path = key.partition("/")
    i_host, _, i_path = image.partition("/")
    k_name, _, k_port = k_host.partition(":")
    i_name, _, i_port = i_host.partition(":")
    k_parts, i_parts = k_name.split("."), i_name.split(".")
    if k_port != i_port or len(k_parts) != len(i_parts):
        return False
    if not ("/" + i_path).startswith("/" + k_path if k_path else "/"):
        return False
    return all(fnmatch.fnmatchcase(i, k) for k, i in zip(k_parts, i_parts, strict=True))


def lookup(ring: list[tuple[str, Credential]], image: str) -> list[Credential]:
    """Every credential whose key matches IMAGE (host/repo...), in the order to try."""
    return [cred for key, cred in ring if _matches(key, image.split("@")[0])]


def digest(cred: Credential) -> str:
    """What identifies a login in the node's records of pulls, not the login itself."""
    return hashlib.sha256(f"{cred[0]}\0{cred[1]}".encode()).hexdigest()


def basic(cred: Credential) -> str:
    return "Basic " + base64.b64encode(f"{cred[0]}:{cred[1]}".encode()).decode()


def challenge(header: str) -> tuple[str, dict[str, str]]:
    """`Bearer realm="...",service="..."` -> ("bearer", {realm: ..., service: ...})."""
    scheme, _, rest = header.strip().partition(" ")
    params = dict(re.findall(r'(\w+)="([^"]*)"', rest))
    return scheme.lower(), params
