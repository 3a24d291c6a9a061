"""The node agent's image pull without the tier: images pushed with skopeo (and the
product's own appended image) to a real docker-registry, pulled by `nodeagent.pull`,
their layers laid out with whiteouts, and the directories a container is shown."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import sys
import tarfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_ddl.config import Config
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.image.builder import build_and_push
from tests.image.bases import (
    OCI_LAYER_GZ,
    Layout,
    layer_tar,
    make_layout,
    push_base,
    write_image,
)
from tests.image.registries import Registry, start_registry
from tests.support.require import executable

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cluster"))

from nodeagent import unpack
from nodeagent.pods import PodRunner
from nodeagent.pull import ARCH, Puller, PullFailed, parse, policy_of, read_registries
from nodeagent.sandbox import Sandbox


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> Iterator[Registry]:
    for name in ("docker-registry", "skopeo"):
        executable(name)
    reg = start_registry("plain", tmp_path_factory.mktemp("registry"))
    yield reg
    reg.stop()


@pytest.fixture
def puller(tmp_path, registry) -> Puller:
    listed = tmp_path / "registries"
    listed.write_text(f"# the test registry\nhttp://{registry.host}\n")
    return Puller(tmp_path / "images", listed)


def _layered(d: Path, layers: list[dict[str, tuple[bytes, int]]], env: list[str]) -> Path:
    """An OCI layout holding one image of LAYERS (lowest first)."""
    lay = Layout(d)
    descs, diffs = [], []
    for files in layers:
        raw = layer_tar(files)
        digest, size = lay.blob(gzip.compress(raw, mtime=0))
        descs.append({"mediaType": OCI_LAYER_GZ, "digest": digest, "size": size})
        diffs.append("sha256:" + hashlib.sha256(raw).hexdigest())
    config = {
        "architecture": ARCH,
        "os": "linux",
        "config": {"Env": env, "WorkingDir": "/opt/app"},
        "rootfs": {"type": "layers", "diff_ids": diffs},
    }
    lay.write_index(write_image(lay, config, descs), "base")
    return d


LOWER = {
    "etc/base-release": (b"base\n", 0o644),
    "opt/app/old.py": (b"old\n", 0o644),
    "opt/app/cache/a": (b"a\n", 0o644),
    "opt/app/keep.txt": (b"keep\n", 0o644),
}
UPPER = {
    "opt/app/.wh.old.py": (b"", 0o644),
    "opt/app/cache/.wh..wh..opq": (b"", 0o644),
    "opt/app/cache/b": (b"b\n", 0o644),
    "opt/app/main.py": (b"print('from the layer')\n", 0o755),
}


def test_two_layers_are_pulled_and_laid_out_with_their_whiteouts(tmp_path, registry, puller):
    layout = _layered(tmp_path / "layout", [LOWER, UPPER], ["PATH=/x", "A=1"])
    image = push_base(registry, layout, "team/app")
    got = puller.ensure({"image": image})
    assert got is not None
    app = got.rootfs / "opt" / "app"
    assert (app / "main.py").read_bytes() == b"print('from the layer')\n"
    assert (app / "main.py").stat().st_mode & 0o777 == 0o755
    assert not (app / "old.py").exists()  # whited out by the upper layer
    assert sorted(p.name for p in (app / "cache").iterdir()) == ["b"]  # opaque directory
    assert (app / "keep.txt").read_text() == "keep\n"
    assert got.env == {"A": "1"} and got.workdir == "/opt/app"  # PATH stays the stand-in's
    # imageID: the repo digest of what the tag resolved to, as containerd reports it
    assert got.repo_digest == f"{registry.host}/team/app@{_registry_digest(registry, 'team/app')}"
    assert puller.ensure({"image": image}).repo_digest == got.repo_digest  # from the cache
    # what a container is shown: the image's directories this machine lacks, whole
    host = tmp_path / "host"
    for d in ("etc", "opt"):
        (host / d).mkdir(parents=True)
        (host / d / "machine-file").write_text("")
    assert unpack.mounts(got.rootfs, str(host)) == [(str(got.rootfs / "opt" / "app"), "/opt/app")]
    (host / "opt" / "app").mkdir()  # an empty mount point left on the machine: still shown
    assert [t for _, t in unpack.mounts(got.rootfs, str(host))] == ["/opt/app"]
    (host / "opt" / "app" / "x").write_text("")  # the machine's own: only what it lacks
    assert [t for _, t in unpack.mounts(got.rootfs, str(host))] == ["/opt/app/cache"]


def test_policies_use_the_cache_as_the_kubelet_does(tmp_path, registry, puller):
    layout = _layered(tmp_path / "layout", [LOWER], [])
    image = push_base(registry, layout, "team/policy")
    with pytest.raises(PullFailed) as never:
        puller.ensure({"image": image, "imagePullPolicy": "Never"})
    assert never.value.reason == "ErrImageNeverPull" and image in never.value.message
    first = puller.ensure({"image": image, "imagePullPolicy": "IfNotPresent"})
    mark = registry.mark()
    again = puller.ensure({"image": image, "imagePullPolicy": "IfNotPresent"})
    assert again == first and registry.access_lines(mark) == []
    puller.ensure({"image": image, "imagePullPolicy": "Always"})
    asked = registry.access_lines(mark)
    assert [m for m, p, _ in asked if "/manifests/" in p] == ["GET"]
    assert not [p for _, p, _ in asked if "/blobs/" in p]  # the manifest only: same image
    assert puller.ensure({"image": image, "imagePullPolicy": "Never"}) == first


def test_an_unknown_tag_fails_with_the_registrys_words(registry, puller):
    image = f"{registry.host}/team/app:no-such-tag"
    with pytest.raises(PullFailed) as e:
        puller.ensure({"image": image})
    assert e.value.reason == "ErrImagePull"
    assert e.value.message.startswith(f'failed to pull and unpack image "{image}": GET http://')
    assert "404" in e.value.message and "MANIFEST_UNKNOWN: manifest unknown" in e.value.message


def test_an_image_elsewhere_is_left_to_the_stand_in(puller):
    assert puller.ensure({"image": "python:3.11"}) is None
    assert puller.ensure({"image": "registry.example:5000/team/app:1"}) is None


def test_an_index_resolves_to_this_machines_platform(tmp_path, registry, puller):
    image = push_base(registry, make_layout(tmp_path / "index", "index"), "team/multi", "index")
    got = puller.ensure({"image": image})
    assert got is not None and (got.rootfs / "etc" / "arch").read_text() == ARCH


def test_the_products_appended_layer_is_what_is_pulled(tmp_path, registry, puller):
    base = push_base(registry, make_layout(tmp_path / "base"), "bases/small")
    cfg = Config(insecure_registries=[registry.host])
    bundle = build_bundle("print('shipped as a layer')\n")
    built = build_and_push(
        bundle, base=base, target_repo=f"{registry.host}/team/ddl-nb", config=cfg
    )
    got = puller.ensure({"image": built.pull_ref})
    assert got is not None and got.digest == built.digest
    code = got.rootfs / "opt" / "jupyter-ddl" / "code"
    assert {p.name: p.read_bytes() for p in code.iterdir()} == dict(bundle.files)
    assert got.workdir == "/opt/jupyter-ddl/code"
    assert got.env["JUPYTER_DDL_CODE_DIR"] == "/opt/jupyter-ddl/code"


def _tar(path: Path, members: list[tarfile.TarInfo]) -> Path:
    with tarfile.open(path, "w") as t:
        for m in members:
            t.addfile(m, io.BytesIO(b"x" * m.size) if m.isfile() else None)
    return path


def test_a_layer_cannot_write_outside_its_root(tmp_path):
    link = tarfile.TarInfo("etc")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc"
    through = tarfile.TarInfo("etc/evil")
    through.size = 1
    layer = _tar(tmp_path / "l.tar", [link, through])
    with pytest.raises(unpack.UnpackError, match="etc/evil"):
        unpack.unpack(tmp_path / "root", [layer])
    up = tarfile.TarInfo("../up")
    up.size = 1
    with pytest.raises(unpack.UnpackError, match="leaves the image's root"):
        unpack.unpack(tmp_path / "root2", [_tar(tmp_path / "u.tar", [up])])


def test_references_registries_and_default_policies(tmp_path):
    r = parse("127.0.0.1:5000/team/app@sha256:ab")
    assert r is not None and (r.host, r.repo, r.tag, r.digest) == (
        "127.0.0.1:5000",
        "team/app",
        None,
        "sha256:ab",
    )
    assert parse("localhost/app") is not None and parse("ubuntu:22.04") is None
    assert policy_of({}, parse("h.example/a")) == "Always"  # type: ignore[arg-type]
    assert policy_of({}, parse("h.example/a:1")) == "IfNotPresent"  # type: ignore[arg-type]
    f = tmp_path / "r"
    f.write_text("127.0.0.1:5000\nregistry.example\nhttp://lan:80 # plain\n")
    assert read_registries(f) == {
        "127.0.0.1:5000": "http://127.0.0.1:5000",
        "registry.example": "https://registry.example",
        "lan:80": "http://lan:80",
    }
    assert read_registries(tmp_path / "absent") == {}


def _registry_digest(registry: Registry, repo: str, tag: str = "base") -> str:
    """The digest the registry itself gives the tag (Docker-Content-Digest)."""
    req = urllib.request.Request(
        f"http://{registry.host}/v2/{repo}/manifests/{tag}",
        method="HEAD",
        headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return str(r.headers["Docker-Content-Digest"])


def _runner(tmp_path: Path, puller: Puller, image: str, argv: list[str]):  # type: ignore[no-untyped-def]
    pod = {
        "metadata": {"name": "p", "namespace": "ns", "uid": uuid.uuid4().hex},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": image, "command": argv}],
        },
    }
    box = Sandbox(None, tmp_path / "data", None, str(Path(sys.executable).parent),  # type: ignore[arg-type]
                  record=tmp_path / "mountpoints", puller=puller)  # fmt: skip
    seen: list[dict] = []
    return PodRunner(pod, tmp_path / "logs", seen.append, box), seen


@pytest.mark.skipif(os.geteuid() != 0, reason="a container's mounts need root")
def test_a_container_sees_the_pulled_layers_files(tmp_path, registry, puller):
    top = f"jddl-pull-{uuid.uuid4().hex[:8]}"  # a directory this machine lacks
    files = {f"opt/{top}/main.py": (b"print('from the pulled layer')\n", 0o644)}
    image = push_base(registry, _layered(tmp_path / "layout", [LOWER, files], []), "team/run")
    r, seen = _runner(tmp_path, puller, image, ["python", f"/opt/{top}/main.py"])
    try:
        r.start()
        r.thread.join(60)
        assert seen[-1]["phase"] == "Succeeded", seen[-1]
        assert b"from the pulled layer" in r.log_path("main", 0).read_bytes()
    finally:
        for made in (tmp_path / "mountpoints").read_text().split():
            shutil.rmtree(made, ignore_errors=True)  # the empty mount point on this machine
    assert not Path(f"/opt/{top}").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="a container's mounts need root")
def test_a_failed_pull_is_errimagepull_then_imagepullbackoff(tmp_path, registry, puller):
    image = f"{registry.host}/team/app:no-such-tag"
    r, seen = _runner(tmp_path, puller, image, ["true"])
    r.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(
            s["containerStatuses"][0]["state"].get("waiting", {}).get("reason")
            == "ImagePullBackOff"
            for s in seen
        ):
            time.sleep(0.1)
    finally:
        r.stop(1.0)
    said = [s["containerStatuses"][0]["state"].get("waiting", {}) for s in seen]
    reasons = [w.get("reason") for w in said]
    assert "ErrImagePull" in reasons and "ImagePullBackOff" in reasons, said
    assert reasons.index("ErrImagePull") < reasons.index("ImagePullBackOff")
    back = said[reasons.index("ImagePullBackOff")]["message"]
    assert (
        back.startswith(f'Back-off pulling image "{image}": ErrImagePull: ')
        and "MANIFEST_UNKNOWN" in back
    )
    assert all(s["phase"] == "Pending" for s in seen)


@pytest.mark.skipif(os.geteuid() != 0, reason="a container's mounts need root")
def test_a_container_writes_its_own_layer_never_the_image_another_pod_sees(
    tmp_path, registry, puller
):
    """As on a cluster, a container may write over its image's files (its own writable
    layer); another pod of the same image still sees the image as pulled."""
    top = f"jddl-pull-{uuid.uuid4().hex[:8]}"
    files = {f"opt/{top}/main.py": (b"print('as pulled')\n", 0o644)}
    image = push_base(registry, _layered(tmp_path / "layout", [LOWER, files], []), "team/rw")
    write = (
        f"import pathlib; d = pathlib.Path('/opt/{top}'); "
        "(d / 'main.py').write_text('changed'); (d / 'new.txt').write_text('new'); "
        f"print('wrote', (d / 'main.py').read_text())"
    )
    read = f"import os; print(open('/opt/{top}/main.py').read().strip(), os.path.exists('/opt/{top}/new.txt'))"
    try:
        for argv, want in (
            (["python", "-c", write], b"wrote changed"),
            (["python", "-c", read], b"print('as pulled') False"),
        ):
            r, seen = _runner(tmp_path / uuid.uuid4().hex[:6], puller, image, argv)
            r.start()
            r.thread.join(60)
            assert seen[-1]["phase"] == "Succeeded", (seen[-1], r.log_path("main", 0).read_bytes())
            assert want in r.log_path("main", 0).read_bytes()
            cs = seen[-1]["containerStatuses"][0]
            assert (
                cs["imageID"] == f"{registry.host}/team/rw@{_registry_digest(registry, 'team/rw')}"
            )
        rootfs = puller.cached(image).rootfs  # type: ignore[union-attr]
        assert (rootfs / "opt" / top / "main.py").read_bytes() == b"print('as pulled')\n"
        assert not (rootfs / "opt" / top / "new.txt").exists()
    finally:
        for made in tmp_path.glob("*/mountpoints"):
            for line in made.read_text().split():
                shutil.rmtree(line, ignore_errors=True)
    assert not Path(f"/opt/{top}").exists()
