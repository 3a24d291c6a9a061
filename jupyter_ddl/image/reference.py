"""Image references: ``registry/namespace/repo:tag@digest`` with Docker Hub defaults.

Pure parsing, no I/O. ``ubuntu`` means ``docker.io/library/ubuntu:latest``; the first
path component is a registry only when it looks like a host (has a dot or a port, or
is ``localhost``), as the Docker CLI decides.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from jupyter_ddl.errors import ValidationError
from jupyter_ddl.i18n import tr

DOCKER_HUB = "docker.io"
#: where Docker Hub's registry API actually lives
DOCKER_HUB_API = "registry-1.docker.io"
#: the key ``docker login`` writes for Docker Hub in ``~/.docker/config.json``
DOCKER_HUB_AUTH_KEY = "https://index.docker.io/v1/"

_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_DIGEST = re.compile(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-fA-F0-9]{32,}$")


@dataclass(frozen=True)
class Reference:
    """A parsed image reference; ``tag`` and ``digest`` may both be set."""

    registry: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    @property
    def api_host(self) -> str:
        """The host:port to talk HTTP to (Docker Hub's API is not at docker.io)."""
        return DOCKER_HUB_API if self.registry == DOCKER_HUB else self.registry

    @property
    def reference(self) -> str:
        """What goes after ``/manifests/``: the digest when pinned, else the tag."""
        return self.digest or self.tag or "latest"

    def with_digest(self, digest: str) -> Reference:
        return Reference(self.registry, self.repository, self.tag, digest)

    @property
    def name(self) -> str:
        return f"{self.registry}/{self.repository}"

    def __str__(self) -> str:
        out = self.name
        if self.tag:
            out += f":{self.tag}"
        if self.digest:
            out += f"@{self.digest}"
        return out


def _looks_like_host(part: str) -> bool:
    return "." in part or ":" in part or part == "localhost" or part != part.lower()


def parse_reference(text: str, *, default_tag: str | None = "latest") -> Reference:
    """Parse an image reference; raises ValidationError naming what is wrong."""
    s = text.strip()
    if not s or "://" in s or " " in s:
        raise ValidationError(
            tr(
                "image reference {text!r} is not valid; write it as registry/repository:tag",
                text=text,
            )
        )
    digest = None
    if "@" in s:
        s, digest = s.split("@", 1)
        if not _DIGEST.match(digest):
            raise ValidationError(
                tr(
                    "image reference {text!r} has a malformed digest; use @sha256:<64 hex>",
                    text=text,
                )
            )
    tag = None
    last = s.rsplit("/", 1)[-1]
    if ":" in last:
        s, tag = s.rsplit(":", 1)
        if not _TAG.match(tag):
            raise ValidationError(
                tr(
                    "image reference {text!r} has an invalid tag {tag!r}; "
                    "tags use letters, digits, '_', '.', '-' (at most 128)",
                    text=text,
                    tag=tag,
                )
            )
    parts = s.split("/")
    if len(parts) > 1 and _looks_like_host(parts[0]):
        registry, path = parts[0], parts[1:]
    else:
        registry, path = DOCKER_HUB, parts
    if registry in ("index.docker.io", "registry-1.docker.io"):
        registry = DOCKER_HUB
    if registry == DOCKER_HUB and len(path) == 1:
        path = ["library", *path]
    for comp in path:
        if not _COMPONENT.match(comp):
            raise ValidationError(
                tr(
                    "image reference {text!r}: repository part {part!r} is not valid; "
                    "use lowercase letters, digits and . _ - separators",
                    text=text,
                    part=comp,
                )
            )
    if tag is None and digest is None:
        tag = default_tag
    return Reference(registry, "/".join(path), tag, digest)


def parse_repository(text: str) -> Reference:
    """A repository without tag (``registry/ns/repo``), e.g. a build target."""
    ref = parse_reference(text, default_tag=None)
    if ref.tag or ref.digest:
        raise ValidationError(
            tr(
                "target repository {text!r} must not carry a tag or digest; the tag comes from the code",
                text=text,
            )
        )
    return ref


def is_loopback(host: str) -> bool:
    """True for localhost / 127.0.0.0/8 / ::1 with or without a port."""
    h = host
    if h.startswith("["):
        h = h[1:].split("]", 1)[0]
    elif h.count(":") == 1:
        h = h.split(":", 1)[0]
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False
