"""Pure append: base manifest + config + code layer + config changes → a new image.

No I/O: the result carries the exact bytes, sizes and digests to push. The new
layer's media type follows the base's flavour (Docker schema2 or OCI), and nothing
time- or machine-dependent enters, so the same inputs give the same digests.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from jupyter_ddl.errors import RegistryError
from jupyter_ddl.i18n import tr
from jupyter_ddl.image.layer import CODE_DIR, Layer, entry_command
from jupyter_ddl.image.manifest import FLAVOURS, canonical_json, flavour, sha256_digest
from jupyter_ddl.models import CodeBundle

LABEL_CODE_DIGEST = "io.jupyter-ddl.code-digest"
LABEL_NOTEBOOK = "io.jupyter-ddl.source-notebook"
LABEL_ENTRYPOINT = "io.jupyter-ddl.entrypoint"
LABEL_BASE = "io.jupyter-ddl.base"
#: the history entry's time: fixed, so the config digest does not depend on the clock
EPOCH = "1970-01-01T00:00:00Z"


@dataclass(frozen=True)
class ConfigChanges:
    """What the code layer changes in the image config (``None``: keep the base's)."""

    env: dict[str, str] = field(default_factory=dict)
    cmd: list[str] | None = None
    working_dir: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    history: str = "jupyter-ddl code layer"


@dataclass(frozen=True)
class AppendedImage:
    """The new image, ready to push: manifest and config bytes with their digests."""

    manifest: bytes = field(repr=False)
    manifest_digest: str
    media_type: str
    config: bytes = field(repr=False)
    config_digest: str
    base_layers: tuple[dict[str, Any], ...]


def code_changes(bundle: CodeBundle, base: str) -> ConfigChanges:
    """The config changes for a bundle: run its entry point from ``CODE_DIR``.

    The Entrypoint of the base is kept (it may be a needed wrapper such as tini);
    only Cmd, WorkingDir, Env and Labels change. No notebook environment enters."""
    labels = {
        LABEL_CODE_DIGEST: bundle.digest,
        LABEL_ENTRYPOINT: bundle.entrypoint,
        LABEL_BASE: base,
    }
    if bundle.source_notebook:
        labels[LABEL_NOTEBOOK] = bundle.source_notebook
    return ConfigChanges(
        env={"JUPYTER_DDL_CODE_DIR": CODE_DIR, "PYTHONUNBUFFERED": "1"},
        cmd=entry_command(bundle.entrypoint),
        working_dir=CODE_DIR,
        labels=labels,
        history=f"jupyter-ddl code layer {bundle.short_digest} ({bundle.entrypoint})",
    )


def _merge_env(env: list[str] | None, changes: dict[str, str]) -> list[str]:
    out = [e for e in env or [] if e.split("=", 1)[0] not in changes]
    return out + [f"{k}={v}" for k, v in sorted(changes.items())]


def append_config(
    base_config: dict[str, Any], layer: Layer, changes: ConfigChanges
) -> dict[str, Any]:
    """A new image config: the base's with the layer's diff_id, history and changes."""
    cfg = copy.deepcopy(base_config)
    run = cfg.get("config") or {}
    run["Env"] = _merge_env(run.get("Env"), changes.env)
    if changes.cmd is not None:
        run["Cmd"] = list(changes.cmd)
    if changes.working_dir is not None:
        run["WorkingDir"] = changes.working_dir
    if changes.labels:
        run["Labels"] = {**(run.get("Labels") or {}), **changes.labels}
    cfg["config"] = run
    rootfs = cfg.get("rootfs") or {"type": "layers", "diff_ids": []}
    rootfs["diff_ids"] = [*rootfs.get("diff_ids", []), layer.diff_id]
    cfg["rootfs"] = rootfs
    cfg["history"] = [
        *(cfg.get("history") or []),
        {"created": EPOCH, "created_by": changes.history},
    ]
    return cfg


def append(
    base_manifest: dict[str, Any],
    base_media_type: str,
    base_config: dict[str, Any],
    layer: Layer,
    changes: ConfigChanges,
) -> AppendedImage:
    """Append ``layer`` to the base image; raises RegistryError if the base is inconsistent."""
    diff_ids = (base_config.get("rootfs") or {}).get("diff_ids") or []
    base_layers = tuple(base_manifest.get("layers") or [])
    if len(diff_ids) != len(base_layers):
        raise RegistryError(
            tr(
                "the base image is inconsistent ({layers} layers, {diff_ids} diff_ids)",
                layers=len(base_layers),
                diff_ids=len(diff_ids),
            ),
            hint=tr("choose another base image"),
        )
    _, _, layer_type = FLAVOURS[flavour(base_media_type)]
    config = canonical_json(append_config(base_config, layer, changes))
    manifest = copy.deepcopy(base_manifest)
    manifest["config"] = {
        **manifest.get("config", {}),
        "size": len(config),
        "digest": sha256_digest(config),
    }
    manifest["layers"] = [
        *base_layers,
        {"mediaType": layer_type, "size": layer.size, "digest": layer.digest},
    ]
    body = canonical_json(manifest)
    return AppendedImage(
        manifest=body,
        manifest_digest=sha256_digest(body),
        media_type=base_media_type,
        config=config,
        config_digest=sha256_digest(config),
        base_layers=base_layers,
    )
