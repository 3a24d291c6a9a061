"""Registry credentials: ``~/.docker/config.json`` and Kubernetes dockerconfigjson secrets.

Lookup order for a registry host, as the Docker CLI does: ``credHelpers[host]``,
then ``credsStore`` (both through a ``docker-credential-<name>`` program), then
``auths[host]``. Passwords live only in ``Credential`` objects, whose ``repr`` hides
them; nothing here logs.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_ddl.errors import RegistryError
from jupyter_ddl.i18n import tr
from jupyter_ddl.image.reference import DOCKER_HUB, DOCKER_HUB_API, DOCKER_HUB_AUTH_KEY


@dataclass(frozen=True)
class Credential:
    """A user name and a secret (password or identity token)."""

    username: str
    password: str = field(repr=False)
    identity_token: str | None = field(default=None, repr=False)


def _host_keys(host: str) -> list[str]:
    """The spellings a config file may use for one registry."""
    keys = [host, f"https://{host}", f"http://{host}", f"https://{host}/v1/", f"https://{host}/v2/"]
    if host in (DOCKER_HUB, DOCKER_HUB_API, "index.docker.io"):
        keys = [DOCKER_HUB_AUTH_KEY, "index.docker.io", "registry-1.docker.io", *keys]
    return keys


def _normalize(key: str) -> str:
    k = key.split("://", 1)[-1]
    return k.split("/", 1)[0]


class CredentialStore:
    """Credentials for registries, from a docker-style ``config.json`` document."""

    def __init__(self, doc: dict[str, Any] | None = None, *, source: str = "config") -> None:
        self._doc = doc or {}
        self.source = source

    # -- construction -------------------------------------------------------
    @classmethod
    def from_docker_config(cls, path: str | os.PathLike[str] | None = None) -> CredentialStore:
        """``$DOCKER_CONFIG/config.json`` (default ``~/.docker/config.json``); empty if absent."""
        if path is None:
            base = os.environ.get("DOCKER_CONFIG") or os.path.join(Path.home(), ".docker")
            path = os.path.join(base, "config.json")
        p = Path(path)
        if not p.exists():
            return cls({}, source=str(p))
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            raise RegistryError(
                tr("cannot read the Docker config {path} ({why})", path=p, why=type(e).__name__),
                hint=tr("fix the JSON or move the file away"),
            ) from None
        return cls(doc, source=str(p))

    @classmethod
    def from_k8s_secret(cls, data: dict[str, str]) -> CredentialStore:
        """From a ``kubernetes.io/dockerconfigjson`` secret's ``data`` (base64 values)."""
        raw = data.get(".dockerconfigjson") or data.get(".dockercfg")
        if raw is None:
            raise RegistryError(
                tr("the secret has no .dockerconfigjson key"),
                hint=tr("use a secret of type kubernetes.io/dockerconfigjson"),
            )
        try:
            doc = json.loads(base64.b64decode(raw))
        except ValueError:
            raise RegistryError(
                tr("the secret's .dockerconfigjson is not base64-encoded JSON"),
                hint=tr("recreate it with `kubectl create secret docker-registry`"),
            ) from None
        if ".dockerconfigjson" not in data:  # legacy .dockercfg: the auths map itself
            doc = {"auths": doc}
        return cls(doc, source="kubernetes secret")

    def merged(self, other: CredentialStore) -> CredentialStore:
        """A store that asks ``self`` first, then ``other``."""
        return _Chain([self, other])

    # -- lookup -------------------------------------------------------------
    def get(self, host: str) -> Credential | None:
        """The credential for ``host`` (``registry:port``), or None for anonymous."""
        helpers = self._doc.get("credHelpers") or {}
        for key in _host_keys(host):
            if key in helpers:
                return _from_helper(helpers[key], key)
        store = self._doc.get("credsStore")
        if store:
            cred = _from_helper(store, _host_keys(host)[0], missing_ok=True)
            if cred:
                return cred
        auths = {_normalize(k): v for k, v in (self._doc.get("auths") or {}).items()}
        for key in _host_keys(host):
            entry = auths.get(_normalize(key))
            if entry:
                return _from_auth_entry(entry, host)
        return None


class _Chain(CredentialStore):
    def __init__(self, stores: list[CredentialStore]) -> None:
        super().__init__({}, source=" + ".join(s.source for s in stores))
        self._stores = stores

    def get(self, host: str) -> Credential | None:
        for s in self._stores:
            cred = s.get(host)
            if cred:
                return cred
        return None


def _from_auth_entry(entry: dict[str, Any], host: str) -> Credential | None:
    if entry.get("auth"):
        try:
            user, _, pw = base64.b64decode(entry["auth"]).decode().partition(":")
        except ValueError:
            raise RegistryError(
                tr("the stored credential for {host} is not valid base64", host=host),
                hint=tr("run `docker login {host}` again", host=host),
            ) from None
        return Credential(user, pw, entry.get("identitytoken"))
    if entry.get("username"):
        return Credential(entry["username"], entry.get("password", ""), entry.get("identitytoken"))
    if entry.get("identitytoken"):
        return Credential("<token>", "", entry["identitytoken"])
    return None


def _from_helper(name: str, server: str, *, missing_ok: bool = False) -> Credential | None:
    """Ask ``docker-credential-<name> get`` (server URL on stdin, JSON on stdout)."""
    prog = f"docker-credential-{name}"
    try:
        out = subprocess.run(
            [prog, "get"], input=server.encode(), capture_output=True, timeout=30, check=False
        )
    except FileNotFoundError:
        if missing_ok:
            return None
        raise RegistryError(
            tr("credential helper {prog} is not installed", prog=prog),
            hint=tr("install it or remove it from ~/.docker/config.json"),
        ) from None
    except subprocess.TimeoutExpired:
        raise RegistryError(
            tr("credential helper {prog} did not answer in 30 s", prog=prog),
            hint=tr("check the helper"),
        ) from None
    if out.returncode != 0:
        if missing_ok:
            return None  # helpers answer non-zero for "no credential for this server"
        # the helper's message may echo the server but never a secret; keep one line
        raise RegistryError(
            tr("credential helper {prog} has no credential for {server}", prog=prog, server=server),
            hint=tr("run `docker login {host}`", host=_normalize(server)),
        )
    try:
        doc = json.loads(out.stdout)
        user, secret = doc["Username"], doc["Secret"]
    except (ValueError, KeyError, TypeError):
        raise RegistryError(
            tr(
                "credential helper {prog} answered something that is not its JSON format", prog=prog
            ),
            hint=tr("check the helper"),
        ) from None
    if user == "<token>":
        return Credential(user, "", secret)
    return Credential(user, secret)
