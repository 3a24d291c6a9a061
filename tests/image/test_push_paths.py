"""Base flavours (Docker schema2, OCI, OCI index, Docker manifest list), the new-
repository mount, changed code, a base in another registry, and retries — against
real registries, with requests counted from their access logs."""

from __future__ import annotations

import hashlib
import json

import pytest
import requests

from jupyter_ddl.config import Config
from jupyter_ddl.image import build_and_push
from jupyter_ddl.image.layer import build_layer
from jupyter_ddl.image.manifest import DOCKER_LAYER, DOCKER_MANIFEST, OCI_LAYER, OCI_MANIFEST

from .bases import skopeo
from .conftest import base_in
from .proxy import FlakyProxy
from .test_registry_variants import make_bundle, unpack

pytestmark = pytest.mark.timeout(180)

MANIFEST_ACCEPT = f"{OCI_MANIFEST}, {DOCKER_MANIFEST}"


def fetch(host: str, repo: str, kind: str, ref: str) -> requests.Response:
    r = requests.get(
        f"http://{host}/v2/{repo}/{kind}/{ref}", headers={"Accept": MANIFEST_ACCEPT}, timeout=10
    )
    r.raise_for_status()
    return r


@pytest.mark.parametrize("kind", ["oci", "docker", "index", "list"])
def test_each_base_flavour_appends_exactly(kind, plain_registry, layouts, tmp_path):
    reg = plain_registry
    base = base_in(reg, layouts, kind, repo=f"bases/{kind}")
    bundle = make_bundle(f"print('{kind}')\n")
    built = build_and_push(
        bundle, base=base, target_repo=f"{reg.host}/team/ddl-{kind}", config=Config()
    )
    resp = fetch(reg.host, f"team/ddl-{kind}", "manifests", built.digest)
    manifest = resp.json()
    docker = kind in ("docker", "list")
    assert resp.headers["Content-Type"] == (DOCKER_MANIFEST if docker else OCI_MANIFEST)
    assert manifest["layers"][-1]["mediaType"] == (DOCKER_LAYER if docker else OCI_LAYER)
    assert "sha256:" + hashlib.sha256(resp.content).hexdigest() == built.digest
    # every declared size and digest is the blob's real one (skopeo is strict about it)
    for desc in [manifest["config"], *manifest["layers"]]:
        blob = fetch(reg.host, f"team/ddl-{kind}", "blobs", desc["digest"]).content
        assert len(blob) == desc["size"]
        assert "sha256:" + hashlib.sha256(blob).hexdigest() == desc["digest"]
    config = fetch(reg.host, f"team/ddl-{kind}", "blobs", manifest["config"]["digest"]).json()
    assert config["architecture"] == "amd64"  # lists resolve to linux/amd64
    assert len(config["rootfs"]["diff_ids"]) == len(manifest["layers"])
    assert config["rootfs"]["diff_ids"][-1] == build_layer(bundle).diff_id
    json.loads(skopeo("inspect", "--tls-verify=false", f"docker://{built.pull_ref}"))
    if kind in ("index", "list"):
        rootfs = unpack(reg, built.pull_ref, tmp_path)
        assert (rootfs / "etc/arch").read_text() == "amd64"


def test_new_repository_mounts_base_layers_and_uploads_only_the_small_parts(
    plain_registry, layouts
):
    reg = plain_registry
    base = base_in(reg, layouts, "oci", repo="bases/mount")
    bundle = make_bundle("print('mount')\n")
    build_and_push(bundle, base=base, target_repo=f"{reg.host}/team/ddl-first", config=Config())
    mark = reg.mark()
    built = build_and_push(
        bundle, base=base, target_repo=f"{reg.host}/team/ddl-second", config=Config()
    )
    lines = reg.access_lines(mark)
    mounts = [p for m, p, s in lines if m == "POST" and "mount=" in p and s == 201]
    manifest = fetch(reg.host, "team/ddl-second", "manifests", built.digest).content
    config_size = json.loads(manifest)["config"]["size"]
    assert len(mounts) == len(json.loads(manifest)["layers"]) - 1  # every base layer
    assert not [
        p
        for m, p, _ in lines
        if m == "GET"
        and "/blobs/" in p
        and "bases/mount" in p
        and p.endswith(json.loads(manifest)["layers"][0]["digest"])
    ]
    assert not [m for m, _, _ in lines if m == "PATCH"]
    assert built.stats.bytes_up == build_layer(bundle).size + config_size + len(manifest)
    assert built.stats.blobs_mounted == 1 and built.stats.blobs_uploaded == 2
    # base manifest, tag HEAD, base config, 1 mount, 2 × (mount-check + PUT), manifest
    assert len(lines) == built.target_stats.requests == 9, lines


def test_changed_code_moves_only_the_code_layer_config_and_manifest(plain_registry, layouts):
    reg = plain_registry
    base = base_in(reg, layouts, "oci", repo="bases/change")
    target = f"{reg.host}/team/ddl-change"
    a = build_and_push(make_bundle("print('a')\n"), base=base, target_repo=target, config=Config())
    mark = reg.mark()
    b = build_and_push(make_bundle("print('b')\n"), base=base, target_repo=target, config=Config())
    lines = reg.access_lines(mark)
    assert a.tag != b.tag and a.digest != b.digest
    puts = [p for m, p, _ in lines if m == "PUT"]
    assert len(puts) == 3 and puts[-1].endswith(f"/manifests/{b.tag}")  # 2 blobs, manifest last
    assert len(lines) == 9 and not [m for m, _, _ in lines if m == "PATCH"]
    assert b.stats.bytes_up < 4000


def test_base_in_another_registry_is_streamed_in_chunks(
    plain_registry, other_registry, layouts, tmp_path
):
    base = base_in(other_registry, layouts, "oci", repo="bases/elsewhere")
    mark = plain_registry.mark()
    built = build_and_push(
        make_bundle("print('elsewhere')\n"),
        base=base,
        target_repo=f"{plain_registry.host}/team/ddl-copied",
        config=Config(),
        chunk_size=128,
    )
    lines = plain_registry.access_lines(mark)
    manifest = fetch(plain_registry.host, "team/ddl-copied", "manifests", built.digest).json()
    base_layer = manifest["layers"][0]
    patches = [p for m, p, s in lines if m == "PATCH" and s == 202]
    assert len(patches) == 1  # one streamed PATCH for the one base layer
    assert not [p for m, p, _ in lines if "from=bases" in p]  # nothing to mount from elsewhere
    assert built.stats.bytes_down >= base_layer["size"]  # read from the other registry
    assert built.stats.blobs_uploaded == 3
    rootfs = unpack(plain_registry, built.pull_ref, tmp_path)
    assert (rootfs / "usr/local/bin/base-tool").exists()
    assert (rootfs / "opt/jupyter-ddl/code/main.py").read_text() == "print('elsewhere')\n"


def test_429_5xx_and_dropped_connections_are_retried(plain_registry, layouts, tmp_path):
    reg = plain_registry
    base = base_in(reg, layouts, "oci", repo="bases/flaky")
    # once each: the tag HEAD answers 429, the manifest PUT 503; a blob HEAD and the
    # streamed PATCH of the base layer (the proxy is "another registry") lose their
    # connection, so the whole blob copy starts again
    fail = {
        ("HEAD", "/manifests/"): 429,
        ("PUT", "/manifests/"): 503,
        ("HEAD", "/blobs/"): "drop",
        ("PATCH", "/blobs/uploads/"): "drop",
    }
    with FlakyProxy(reg.host, fail=fail) as proxy:
        built = build_and_push(
            make_bundle("print('flaky')\n"),
            base=base,
            target_repo=f"{proxy.host}/team/ddl-flaky",
            config=Config(),
        )
        assert proxy.injected == dict.fromkeys(fail, 1)
    rootfs = unpack(reg, f"{reg.host}/team/ddl-flaky@{built.digest}", tmp_path)
    assert (rootfs / "etc/base-release").exists()
    assert (rootfs / "opt/jupyter-ddl/code/main.py").read_text() == "print('flaky')\n"
