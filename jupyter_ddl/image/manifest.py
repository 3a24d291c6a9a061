"""Manifest formats: Docker v2 schema2 and OCI image manifests, manifest lists and
OCI indexes. Pure functions over the parsed JSON; no I/O.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from jupyter_ddl.errors import RegistryError
from jupyter_ddl.i18n import tr

DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"

INDEX_TYPES = (DOCKER_LIST, OCI_INDEX)
IMAGE_TYPES = (DOCKER_MANIFEST, OCI_MANIFEST)
#: the Accept header for every manifest request (without it distribution hides OCI ones)
MANIFEST_ACCEPT = ", ".join((OCI_INDEX, DOCKER_LIST, OCI_MANIFEST, DOCKER_MANIFEST))

#: per flavour: (manifest, config, gzip layer) media types
FLAVOURS = {
    "docker": (DOCKER_MANIFEST, DOCKER_CONFIG, DOCKER_LAYER),
    "oci": (OCI_MANIFEST, OCI_CONFIG, OCI_LAYER),
}


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_json(doc: Any) -> bytes:
    """Stable bytes for a manifest or config: sorted keys, no spaces, UTF-8."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def parse_manifest(body: bytes, media_type: str, what: str) -> tuple[dict[str, Any], str]:
    """The manifest document and its media type (from the body when the header is vague).

    Raises RegistryError for schema 1 and for anything that is not a manifest."""
    try:
        doc = json.loads(body)
    except ValueError:
        raise RegistryError(
            tr("{what}: the registry sent a manifest that is not JSON", what=what)
        ) from None
    if not isinstance(doc, dict):
        raise RegistryError(
            tr("{what}: the registry sent a manifest that is not a JSON object", what=what)
        )
    mt = doc.get("mediaType") or media_type
    if doc.get("schemaVersion") == 1 or "signed" in mt:
        raise RegistryError(
            tr("{what} uses the retired Docker schema 1 format", what=what),
            hint=tr("re-push the base image with a current client (skopeo copy --format v2s2)"),
        )
    if mt not in INDEX_TYPES + IMAGE_TYPES:
        # OCI allows mediaType to be absent: guess from the shape
        mt = OCI_INDEX if "manifests" in doc else OCI_MANIFEST if "layers" in doc else mt
    if mt not in INDEX_TYPES + IMAGE_TYPES:
        raise RegistryError(
            tr(
                "{what} is not an image (media type {media_type})",
                what=what,
                media_type=mt or "unknown",
            )
        )
    return doc, mt


def parse_platform(text: str) -> tuple[str, str, str | None]:
    """``linux/arm64/v8`` → ("linux", "arm64", "v8")."""
    parts = text.split("/")
    if len(parts) not in (2, 3) or not all(parts):
        raise RegistryError(
            tr("platform {text!r} is not os/arch[/variant]", text=text),
            hint=tr("e.g. {example}", example="linux/amd64"),
        )
    return parts[0], parts[1], parts[2] if len(parts) == 3 else None


def select_platform(index: dict[str, Any], platform: str, what: str) -> dict[str, Any]:
    """The descriptor of the image for ``platform`` in a manifest list / OCI index."""
    os_, arch, variant = parse_platform(platform)
    seen = []
    for desc in index.get("manifests") or []:
        p = desc.get("platform") or {}
        seen.append(
            "/".join(x for x in (p.get("os"), p.get("architecture"), p.get("variant")) if x)
        )
        same = p.get("os") == os_ and p.get("architecture") == arch
        if same and (variant is None or p.get("variant") in (None, variant)):
            return dict(desc)
    raise RegistryError(
        tr(
            "{what} has no image for {platform} (it has: {seen})",
            what=what,
            platform=platform,
            seen=", ".join(seen) or "none",
        ),
        hint=tr("choose another base image or set the platform"),
    )


def flavour(media_type: str) -> str:
    """ "docker" or "oci": the family new descriptors must follow."""
    return "docker" if media_type == DOCKER_MANIFEST else "oci"
