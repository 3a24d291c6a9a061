"""Base images made without Docker: an OCI layout written here, pushed with skopeo.

Four shapes: an OCI image, a Docker schema2 image (skopeo converts with
``--format v2s2``), an OCI index and a Docker manifest list, each list holding
linux/arm64 + linux/amd64 images. Layers may
be uncompressed tars of random bytes, for the big-base memory and speed checks.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import tarfile
from pathlib import Path

from .registries import Registry

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER_GZ = "application/vnd.oci.image.layer.v1.tar+gzip"
OCI_LAYER_TAR = "application/vnd.oci.image.layer.v1.tar"

#: the files every small base carries: path → (content, mode)
BASE_FILES = {
    "usr/local/bin/base-tool": (b"#!/bin/sh\necho base\n", 0o755),
    "etc/base-release": (b"jupyter-ddl test base\n", 0o644),
}


class Layout:
    """An OCI image layout directory being written."""

    def __init__(self, d: Path) -> None:
        self.dir = d
        (d / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
        (d / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))

    def blob(self, data: bytes) -> tuple[str, int]:
        digest = hashlib.sha256(data).hexdigest()
        (self.dir / "blobs" / "sha256" / digest).write_bytes(data)
        return "sha256:" + digest, len(data)

    def big_blob(self, size: int) -> tuple[str, str, int]:
        """An uncompressed tar holding one file of ``size`` random bytes, written in
        pieces; returns (digest, diff_id (the same), blob size)."""
        tmp = self.dir / "big.tmp"
        h = hashlib.sha256()
        with open(tmp, "wb") as f:
            info = tarfile.TarInfo("opt/big.bin")
            info.size, info.mode = size, 0o644
            head = info.tobuf(format=tarfile.PAX_FORMAT)
            f.write(head)
            h.update(head)
            left = size
            while left:
                piece = os.urandom(min(left, 8 << 20))
                f.write(piece)
                h.update(piece)
                left -= len(piece)
            tail = b"\0" * ((512 - size % 512) % 512) + b"\0" * 1024
            f.write(tail)
            h.update(tail)
        digest = h.hexdigest()
        tmp.rename(self.dir / "blobs" / "sha256" / digest)
        total = (self.dir / "blobs" / "sha256" / digest).stat().st_size
        return "sha256:" + digest, "sha256:" + digest, total

    def write_index(self, desc: dict, tag: str) -> None:
        ref = {**desc, "annotations": {"org.opencontainers.image.ref.name": tag}}
        (self.dir / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [ref]}))


def layer_tar(files: dict[str, tuple[bytes, int]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        dirs = sorted({str(Path(p).parent) for p in files} - {"."})
        for d in sorted(
            {str(x) for p in dirs for x in [Path(p), *Path(p).parents] if str(x) != "."}
        ):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for path, (content, mode) in sorted(files.items()):
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(content), mode
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def _image(lay: Layout, arch: str, big: int = 0) -> dict:
    """Write one image's layers, config and manifest; returns the manifest descriptor."""
    raw = layer_tar({**BASE_FILES, "etc/arch": (arch.encode(), 0o644)})
    gz = gzip.compress(raw, mtime=0)
    d, s = lay.blob(gz)
    layers = [{"mediaType": OCI_LAYER_GZ, "digest": d, "size": s}]
    diff_ids = ["sha256:" + hashlib.sha256(raw).hexdigest()]
    if big:
        bd, bdiff, bs = lay.big_blob(big)
        layers.append({"mediaType": OCI_LAYER_TAR, "digest": bd, "size": bs})
        diff_ids.append(bdiff)
    config = {
        "architecture": arch,
        "os": "linux",
        "config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "BASE_VAR=1"], "Cmd": ["sh"]},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [{"created_by": f"test base layer {i}"} for i in range(len(layers))],
    }
    return {**write_image(lay, config, layers), "platform": {"architecture": arch, "os": "linux"}}


def write_image(lay: Layout, config: dict, layers: list[dict]) -> dict:
    """Write an image's config and OCI manifest (its layers' blobs already written);
    returns the manifest's descriptor."""
    cd, cs = lay.blob(json.dumps(config).encode())
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": cd, "size": cs},
        "layers": layers,
    }
    md, ms = lay.blob(json.dumps(manifest).encode())
    return {"mediaType": OCI_MANIFEST, "digest": md, "size": ms}


def make_layout(d: Path, kind: str = "oci", tag: str = "base", big: int = 0) -> Path:
    """An OCI layout with one image (``oci``/``docker``) or an amd64+arm64 index."""
    lay = Layout(d)
    if kind == "index":
        descs = [_image(lay, "arm64"), _image(lay, "amd64")]
        idx = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": descs}
        xd, xs = lay.blob(json.dumps(idx).encode())
        lay.write_index({"mediaType": OCI_INDEX, "digest": xd, "size": xs}, tag)
    else:
        desc = _image(lay, "amd64", big)
        lay.write_index({k: v for k, v in desc.items() if k != "platform"}, tag)
    return d


def skopeo(*args: str, timeout: float = 300) -> str:
    out = subprocess.run(
        ["skopeo", "--insecure-policy", *args], capture_output=True, text=True, timeout=timeout
    )
    if out.returncode != 0:
        raise AssertionError(f"skopeo {' '.join(args[:2])} failed: {out.stderr.strip()[-800:]}")
    return out.stdout


def push_base(reg: Registry, layout: Path, repo: str, kind: str = "oci", tag: str = "base") -> str:
    """Copy the layout into ``reg`` as ``repo:tag``; returns the reference."""
    fmt = ["--format", "v2s2"] if kind in ("docker", "list") else []
    every = ["--all"] if kind in ("index", "list") else []
    ref = f"{reg.host}/{repo}:{tag}"
    skopeo(
        "copy", *fmt, *every, *reg.skopeo_flags("dest"), f"oci:{layout}:{tag}", f"docker://{ref}"
    )
    return ref
