"""The pure parts: references, the deterministic layer, append, credentials, auth
parsing, tags and the progress bar. No registry needed."""

from __future__ import annotations

import base64
import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from jupyter_ddl.errors import RegistryError, ValidationError
from jupyter_ddl.image.append import LABEL_CODE_DIGEST, append, code_changes
from jupyter_ddl.image.auth import merge_scopes, parse_challenge, token_request
from jupyter_ddl.image.credentials import Credential, CredentialStore
from jupyter_ddl.image.layer import CODE_DIR, build_layer
from jupyter_ddl.image.manifest import (
    DOCKER_LAYER,
    DOCKER_MANIFEST,
    OCI_LAYER,
    OCI_MANIFEST,
    canonical_json,
    select_platform,
    sha256_digest,
)
from jupyter_ddl.image.plan import image_tag
from jupyter_ddl.image.progress import TextProgress, render_bar
from jupyter_ddl.image.reference import is_loopback, parse_reference, parse_repository
from jupyter_ddl.models import CodeBundle

BUNDLE = CodeBundle(
    files={"main.py": b"print('hi')\n", "pkg/a/b.py": b"B = 1\n", "data.txt": "é".encode()},
    source_notebook="nb.ipynb",
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ubuntu", ("docker.io", "library/ubuntu", "latest", None)),
        ("pytorch/pytorch:2.13.0", ("docker.io", "pytorch/pytorch", "2.13.0", None)),
        ("localhost:5000/a/b", ("localhost:5000", "a/b", "latest", None)),
        ("ghcr.io/o/r@sha256:" + "a" * 64, ("ghcr.io", "o/r", None, "sha256:" + "a" * 64)),
        ("reg.example/x:t@sha256:" + "b" * 64, ("reg.example", "x", "t", "sha256:" + "b" * 64)),
        ("index.docker.io/alpine", ("docker.io", "library/alpine", "latest", None)),
    ],
)
def test_references_with_docker_hub_defaults(text, expected):
    ref = parse_reference(text)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == expected
    assert parse_reference(str(ref)) == ref


def test_docker_hub_api_host_and_bad_references():
    assert parse_reference("alpine").api_host == "registry-1.docker.io"
    for bad in ("", "Foo Bar", "http://x/y", "a/B", "x:bad tag", "x@sha256:zz", "r.io/a//b"):
        with pytest.raises(ValidationError):
            parse_reference(bad)
    with pytest.raises(ValidationError, match="must not carry a tag"):
        parse_repository("r.io/team/app:1")
    assert is_loopback("127.0.0.1:5000") and is_loopback("localhost") and is_loopback("[::1]:80")
    assert not is_loopback("10.0.0.1:5000") and not is_loopback("registry.example")


def test_layer_is_deterministic_in_any_process(tmp_path):
    layer = build_layer(BUNDLE)
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[1]);"
        "from jupyter_ddl.models import CodeBundle; from jupyter_ddl.image.layer import build_layer;"
        "b = CodeBundle(files={'pkg/a/b.py': b'B = 1\\n', 'data.txt': 'é'.encode(), 'main.py': b\"print('hi')\\n\"},"
        " source_notebook='nb.ipynb'); l = build_layer(b); print(l.digest, l.diff_id)"
    )
    env = {**os.environ, "PYTHONHASHSEED": "123", "TZ": "Asia/Tokyo", "LC_ALL": "C"}
    out = subprocess.run(
        ["sh", "-c", 'umask 077; exec "$0" -c "$1" "$2"', sys.executable, code, str(Path.cwd())],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.split() == [layer.digest, layer.diff_id]


def test_layer_entries_are_normalised():
    layer = build_layer(BUNDLE)
    assert layer.data[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # no name, mtime 0
    raw = gzip.decompress(layer.data)
    assert sha256_digest(raw) == layer.diff_id and sha256_digest(layer.data) == layer.digest
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    root = CODE_DIR.lstrip("/")
    assert names == sorted(names)
    assert names[:3] == ["opt", "opt/jupyter-ddl", root]
    assert f"{root}/pkg" in names and f"{root}/pkg/a" in names  # explicit parents
    for m in members:
        assert (m.mtime, m.uid, m.gid, m.uname, m.gname) == (0, 0, 0, "", "")
        assert m.mode == (0o755 if m.isdir() or m.name.endswith("main.py") else 0o644)


@pytest.mark.parametrize("path", ["/etc/passwd", "../x.py", "a/../../x", "a//b", "a\\b"])
def test_bad_bundle_paths_are_refused(path):
    with pytest.raises(ValidationError, match="plain relative path"):
        build_layer(CodeBundle(files={"main.py": b"", path: b""}))
    with pytest.raises(ValidationError, match="no entry point"):
        build_layer(CodeBundle(files={"other.py": b""}))


def _base(flavour: str) -> tuple[dict, dict]:
    layer_type = DOCKER_LAYER if flavour == "docker" else OCI_LAYER
    manifest = {
        "schemaVersion": 2,
        "mediaType": DOCKER_MANIFEST if flavour == "docker" else OCI_MANIFEST,
        "config": {"mediaType": "x", "size": 1, "digest": "sha256:" + "0" * 64},
        "layers": [{"mediaType": layer_type, "size": 10, "digest": "sha256:" + "1" * 64}],
    }
    config = {
        "architecture": "amd64",
        "config": {
            "Env": ["PATH=/bin", "PYTHONUNBUFFERED=0"],
            "Entrypoint": ["/tini"],
            "Labels": {"keep": "1"},
        },
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + "2" * 64]},
        "history": [{"created_by": "base"}],
    }
    return manifest, config


@pytest.mark.parametrize("flavour", ["docker", "oci"])
def test_append_is_exact_and_follows_the_flavour(flavour):
    manifest, config = _base(flavour)
    mt = manifest["mediaType"]
    layer = build_layer(BUNDLE)
    img = append(manifest, mt, config, layer, code_changes(BUNDLE, "r.io/base@sha256:" + "3" * 64))
    new = json.loads(img.manifest)
    assert img.manifest_digest == sha256_digest(img.manifest) and img.media_type == mt
    assert new["config"] == {
        "mediaType": "x",
        "size": len(img.config),
        "digest": sha256_digest(img.config),
    }
    assert new["layers"][0] == manifest["layers"][0]
    assert new["layers"][1] == {
        "mediaType": DOCKER_LAYER if flavour == "docker" else OCI_LAYER,
        "size": layer.size,
        "digest": layer.digest,
    }
    cfg = json.loads(img.config)
    assert cfg["rootfs"]["diff_ids"] == [*config["rootfs"]["diff_ids"], layer.diff_id]
    run = cfg["config"]
    assert run["Entrypoint"] == ["/tini"] and run["Cmd"] == ["python", f"{CODE_DIR}/main.py"]
    assert run["Env"] == ["PATH=/bin", f"JUPYTER_DDL_CODE_DIR={CODE_DIR}", "PYTHONUNBUFFERED=1"]
    assert run["Labels"]["keep"] == "1" and run["Labels"][LABEL_CODE_DIGEST] == BUNDLE.digest
    assert len(cfg["history"]) == 2 and cfg["history"][1]["created"] == "1970-01-01T00:00:00Z"
    assert config["rootfs"]["diff_ids"] == ["sha256:" + "2" * 64]  # the input is untouched
    again = append(
        manifest, mt, config, layer, code_changes(BUNDLE, "r.io/base@sha256:" + "3" * 64)
    )
    assert again == img
    config["rootfs"]["diff_ids"] = []
    with pytest.raises(RegistryError, match="inconsistent"):
        append(manifest, mt, config, layer, code_changes(BUNDLE, "b"))


def test_platform_selection_and_canonical_json():
    index = {
        "manifests": [
            {
                "digest": "sha256:a",
                "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"},
            },
            {"digest": "sha256:b", "platform": {"os": "linux", "architecture": "amd64"}},
        ]
    }
    assert select_platform(index, "linux/amd64", "x")["digest"] == "sha256:b"
    assert select_platform(index, "linux/arm64/v8", "x")["digest"] == "sha256:a"
    with pytest.raises(
        RegistryError, match="no image for linux/s390x .*linux/arm64/v8, linux/amd64"
    ):
        select_platform(index, "linux/s390x", "base image b")
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'.encode()


def test_tag_follows_the_content():
    base = parse_reference("r.io/base:1")
    t = image_tag(BUNDLE, base.name, "sha256:" + "a" * 64, "linux/amd64")
    assert t == image_tag(BUNDLE, base.name, "sha256:" + "a" * 64, "linux/amd64")
    assert t.startswith(f"code-{BUNDLE.short_digest}-") and len(t) <= 128
    other = CodeBundle(files={**BUNDLE.files, "main.py": b"print(2)\n"}, source_notebook="nb.ipynb")
    assert (
        len(
            {
                t,
                image_tag(other, base.name, "sha256:" + "a" * 64, "linux/amd64"),
                image_tag(BUNDLE, base.name, "sha256:" + "b" * 64, "linux/amd64"),
                image_tag(BUNDLE, base.name, "sha256:" + "a" * 64, "linux/arm64"),
            }
        )
        == 4
    )


def test_docker_config_auths_store_and_k8s_secret(tmp_path, monkeypatch):
    auth = base64.b64encode(b"alice:pw1").decode()
    doc = {
        "auths": {
            "https://index.docker.io/v1/": {"auth": auth},
            "r.io:5000": {"username": "bob", "password": "pw2"},
        }
    }
    (tmp_path / "config.json").write_text(json.dumps(doc))
    store = CredentialStore.from_docker_config(tmp_path / "config.json")
    assert store.get("docker.io") == Credential("alice", "pw1")
    assert store.get("registry-1.docker.io") == Credential("alice", "pw1")  # Hub's API host
    assert store.get("r.io:5000") == Credential("bob", "pw2")
    assert store.get("other.io") is None
    assert "pw1" not in repr(store.get("docker.io"))
    secret = {
        ".dockerconfigjson": base64.b64encode(
            json.dumps({"auths": {"k.io": {"auth": auth}}}).encode()
        ).decode()
    }
    k8s = CredentialStore.from_k8s_secret(secret)
    assert k8s.get("k.io") == Credential("alice", "pw1")
    assert k8s.merged(store).get("r.io:5000") == Credential("bob", "pw2")
    with pytest.raises(RegistryError, match="no .dockerconfigjson"):
        CredentialStore.from_k8s_secret({"token": "x"})
    # credsStore through a helper program on PATH; a helper that fails means "none"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "docker-credential-teststore").write_text(
        '#!/bin/sh\nread s\n[ "$s" = "s.io" ] || exit 1\necho \'{"Username":"<token>","Secret":"idtok"}\'\n'
    )
    (bindir / "docker-credential-teststore").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    store = CredentialStore({"credsStore": "teststore", "auths": doc["auths"]})
    assert store.get("s.io") == Credential("<token>", "", "idtok")
    assert store.get("r.io:5000") == Credential("bob", "pw2")  # the store has none: auths
    with pytest.raises(RegistryError, match="docker-credential-missing is not installed"):
        CredentialStore({"credHelpers": {"h.io": "missing"}}).get("h.io")


def test_challenges_scopes_and_token_requests():
    ch = parse_challenge(
        'Bearer realm="https://auth.io/token",service="reg",scope="repository:a/b:pull"'
    )
    assert ch is not None and ch.scheme == "bearer" and ch.realm == "https://auth.io/token"
    assert ch.params["scope"] == "repository:a/b:pull"
    assert parse_challenge('Basic realm="x"').scheme == "basic" and parse_challenge(None) is None
    assert merge_scopes({"repository:a:pull", "repository:a:push", "repository:b:pull"}) == [
        "repository:a:pull,push",
        "repository:b:pull",
    ]
    req = token_request(ch, ["repository:a:pull"], Credential("u", "p"))
    assert req.method == "GET" and ("scope", "repository:a:pull") in req.params
    assert req.headers["Authorization"] == "Basic " + base64.b64encode(b"u:p").decode()
    oauth = token_request(ch, ["repository:a:pull"], Credential("<token>", "", "refresh"))
    assert oauth.method == "POST" and oauth.data and oauth.data["grant_type"] == "refresh_token"


def test_text_progress_bar():
    assert render_bar(50, 100, 10) == "[#####-----]  50% 0.0/0.0 MB"
    out = io.StringIO()
    bar = TextProgress(out, hz=1000)
    bar(0, 2_000_000)
    bar(2_000_000, 2_000_000)
    assert out.getvalue().endswith("[" + "#" * 30 + "] 100% 2.0/2.0 MB\n")


def test_registry_failures_are_one_line_with_a_next_step():
    from jupyter_ddl.errors import TransientRegistryError
    from jupyter_ddl.image.registry_errors import (
        error_code,
        http_failure,
        retry_after,
    )

    cases = {
        (401, False): "needs a login",
        (401, True): "refused the credentials",
        (403, True): "denied access",
        (404, True): "not found",
        (429, True): "rate limiting",
        (503, True): "answered HTTP 503",
    }
    for (status, logged_in), words in cases.items():
        err = http_failure("r.io", status, "reading r.io/a:1", logged_in=logged_in)
        text = str(err)
        assert words in text and "r.io" in text and "\n" not in text and err.hint, text
        assert isinstance(err, TransientRegistryError) == (status >= 500)
    assert error_code(b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}') == "MANIFEST_UNKNOWN"
    assert error_code(b"<html>") == "" and retry_after("3") == 3.0 and retry_after("soon") is None
