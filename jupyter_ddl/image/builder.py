"""``build_and_push``: a code bundle on top of a base image, pushed to a registry.

The tag is derived from everything that decides the image's bytes (base digest,
platform, bundle digest, source notebook, builder format), so pushing unchanged code
costs the base manifest GET and one manifest HEAD (plus a 401 where a login is
needed), and uploads nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_ddl._util.atomic import write_atomic
from jupyter_ddl.config import Config, load_config
from jupyter_ddl.errors import RegistryError
from jupyter_ddl.i18n import tr
from jupyter_ddl.image.append import AppendedImage, append, code_changes
from jupyter_ddl.image.auth import repo_scope
from jupyter_ddl.image.credentials import CredentialStore
from jupyter_ddl.image.layer import Layer, build_layer
from jupyter_ddl.image.manifest import INDEX_TYPES, parse_manifest, select_platform
from jupyter_ddl.image.plan import DEFAULT_PLATFORM, image_tag
from jupyter_ddl.image.progress import ProgressCallback, Stats
from jupyter_ddl.image.push import CHUNK_SIZE, Source, push_image
from jupyter_ddl.image.reference import Reference, parse_reference, parse_repository
from jupyter_ddl.image.registry import RegistryClient
from jupyter_ddl.models import CodeBundle

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BuiltImage:
    """A pushed image: pull it by ``pull_ref`` (pinned by digest)."""

    repository: str  # registry/namespace/repo
    tag: str
    digest: str
    base: str  # the base reference, pinned by digest
    code_digest: str
    pushed: bool  # False: the image was there already, nothing was uploaded
    stats: Stats = field(default_factory=Stats)  # all registries together
    target_stats: Stats = field(default_factory=Stats)  # the target registry only

    @property
    def ref(self) -> str:
        return f"{self.repository}:{self.tag}@{self.digest}"

    @property
    def pull_ref(self) -> str:
        return f"{self.repository}@{self.digest}"


def _ca_bundle(ca: str | None) -> str | None:
    """The system CAs plus the configured registry CA in one file, so the custom CA
    does not break public registries (requests takes one bundle per request)."""
    if not ca:
        return None
    try:
        import certifi

        extra = Path(ca).read_bytes()
        system = Path(certifi.where()).read_bytes()
    except OSError as e:
        raise RegistryError(
            tr("cannot read registry_ca {path} ({why})", path=ca, why=e.strerror),
            hint=tr("fix the path in the config"),
        ) from None
    digest = hashlib.sha256(system + extra).hexdigest()[:16]
    path = os.path.join(tempfile.gettempdir(), f"jupyter-ddl-ca-{digest}.pem")
    if not os.path.exists(path):
        write_atomic(path, system + b"\n" + extra, mode=0o644)
    return path


def _clients(
    base: Reference, target: Reference, cfg: Config, creds: CredentialStore
) -> tuple[RegistryClient, RegistryClient]:
    ca = _ca_bundle(cfg.registry_ca)
    insecure = {h.split("://", 1)[-1].rstrip("/") for h in cfg.insecure_registries}

    def make(host: str, scopes: list[str]) -> RegistryClient:
        return RegistryClient(
            host, credentials=creds, insecure=host in insecure, ca=ca, scopes=scopes
        )

    push_scope = repo_scope(target.repository, "pull,push")
    pull_scope = repo_scope(base.repository, "pull")
    if base.api_host == target.api_host:
        # one client, one token covering pull of the base and push of the target
        one = make(target.api_host, [pull_scope, push_scope])
        return one, one
    return make(base.api_host, [pull_scope]), make(target.api_host, [push_scope])


def _resolve_base(
    src: RegistryClient, base: Reference, platform: str
) -> tuple[str, dict[str, Any], str]:
    """(digest naming the base, its image manifest, that manifest's media type)."""
    what = f"base image {base}"
    body, mt, digest = src.get_manifest(base.repository, base.reference)
    doc, mt = parse_manifest(body, mt, what)
    if mt in INDEX_TYPES:
        desc = select_platform(doc, platform, what)
        body, mt, _ = src.get_manifest(base.repository, desc["digest"])
        doc, mt = parse_manifest(body, mt, what)
        if mt in INDEX_TYPES:
            raise RegistryError(
                tr("{what} nests indexes; choose a single-platform image", what=what)
            )
    return digest, doc, mt


def build_and_push(
    bundle: CodeBundle,
    *,
    base: str,
    target_repo: str,
    config: Config | None = None,
    progress: ProgressCallback | None = None,
    credentials: CredentialStore | None = None,
    platform: str = DEFAULT_PLATFORM,
    chunk_size: int = CHUNK_SIZE,
) -> BuiltImage:
    """Append ``bundle`` as a layer to ``base`` and push it to ``target_repo``.

    ``credentials`` default to ``~/.docker/config.json``; pass
    ``CredentialStore.from_k8s_secret(...)`` for a pull secret. ``progress(done, total)``
    is called for uploads of at least ``progress.PROGRESS_THRESHOLD`` bytes.
    Raises ValidationError (bad reference or bundle) and RegistryError (everything the
    registries answer), each one line."""
    cfg = config or load_config()
    base_ref = parse_reference(base)
    target = parse_repository(target_repo)
    layer: Layer = build_layer(bundle)  # bad bundles fail before any request
    creds = credentials or CredentialStore.from_docker_config()
    src, dst = _clients(base_ref, target, cfg, creds)
    try:
        base_digest, manifest, media_type = _resolve_base(src, base_ref, platform)
        pinned = base_ref.with_digest(base_digest)
        tag = image_tag(bundle, base_ref.name, base_digest, platform)
        existing = dst.head_manifest(target.repository, tag)
        if existing:
            log.info("image %s:%s exists already (%s)", target.name, tag, existing)
            return _result(target, tag, existing, pinned, bundle, False, src, dst)
        what = f"base image {base_ref}"
        cfg_desc = manifest.get("config") or {}
        if "digest" not in cfg_desc:
            raise RegistryError(tr("{what} has a manifest without a config", what=what))
        try:
            base_config = json.loads(src.get_blob(base_ref.repository, cfg_desc["digest"]))
        except ValueError:
            base_config = None
        if not isinstance(base_config, dict):
            raise RegistryError(tr("{what} has a config that is not a JSON object", what=what))
        image: AppendedImage = append(
            manifest, media_type, base_config, layer, code_changes(bundle, str(pinned))
        )
        digest = push_image(
            image,
            layer,
            src=Source(src, base_ref.repository),
            dst=dst,
            repository=target.repository,
            tag=tag,
            progress=progress,
            chunk_size=chunk_size,
        )
        if digest != image.manifest_digest:
            raise RegistryError(
                tr(
                    "registry {registry} stored the manifest as {digest}, not {expected}",
                    registry=target.registry,
                    digest=digest,
                    expected=image.manifest_digest,
                )
            )
        return _result(target, tag, digest, pinned, bundle, True, src, dst)
    finally:
        src.close()
        dst.close()


def _result(
    target: Reference,
    tag: str,
    digest: str,
    base: Reference,
    bundle: CodeBundle,
    pushed: bool,
    src: RegistryClient,
    dst: RegistryClient,
) -> BuiltImage:
    total = Stats()
    total.add(dst.stats)
    if src is not dst:
        total.add(src.stats)
    return BuiltImage(target.name, tag, digest, str(base), bundle.digest, pushed, total, dst.stats)
