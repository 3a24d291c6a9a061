"""The image builder's promises in all four registry variants (plain, basic, tls, token):
an appended image that skopeo and umoci accept, the same tag and digest for the same
code with ≤ 3 requests and no uploads the second time, and one-line errors."""

from __future__ import annotations

import base64
import gzip
import json
import logging
import os
import stat
import subprocess
from pathlib import Path

import pytest

from jupyter_ddl.config import Config
from jupyter_ddl.errors import RegistryError
from jupyter_ddl.image import CODE_DIR, build_and_push, entry_command
from jupyter_ddl.image.credentials import CredentialStore
from jupyter_ddl.image.registry import RegistryClient
from jupyter_ddl.models import CodeBundle

from .bases import skopeo
from .conftest import base_in, login
from .registries import PASSWORD, USER, Registry

pytestmark = pytest.mark.timeout(180)


def make_bundle(body: str = "print('hello from the cell')\n") -> CodeBundle:
    return CodeBundle(
        files={"main.py": body.encode(), "lib/util.py": b"ANSWER = 42\n"},
        entrypoint="main.py",
        source_notebook="work/Train Model.ipynb",
    )


def unpack(reg: Registry, ref: str, tmp: Path) -> Path:
    """Copy the image out with skopeo and unpack it with umoci; returns the rootfs."""
    oci = tmp / "oci"
    skopeo("copy", *reg.skopeo_flags("src"), f"docker://{ref}", f"oci:{oci}:img")
    out = subprocess.run(
        ["umoci", "unpack", "--rootless", "--image", f"{oci}:img", str(tmp / "bundle")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return tmp / "bundle" / "rootfs"


def mode(p: Path) -> int:
    return stat.S_IMODE(p.lstat().st_mode)


def test_appended_image_is_accepted_and_unpacks(registry, layouts, docker_config, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    cfg = login(registry, docker_config)
    base = base_in(registry, layouts, "oci")
    built = build_and_push(
        make_bundle(), base=base, target_repo=f"{registry.host}/team/ddl-train", config=cfg
    )
    assert built.pushed and built.digest.startswith("sha256:")

    info = json.loads(
        skopeo("inspect", *registry.skopeo_flags(""), f"docker://{built.repository}:{built.tag}")
    )
    assert info["Digest"] == built.digest
    assert info["Labels"]["io.jupyter-ddl.code-digest"] == make_bundle().digest
    assert info["Labels"]["io.jupyter-ddl.source-notebook"] == "work/Train Model.ipynb"
    raw = json.loads(
        skopeo("inspect", "--config", *registry.skopeo_flags(""), f"docker://{built.pull_ref}")
    )
    assert raw["config"]["Cmd"] == entry_command("main.py") == ["python", f"{CODE_DIR}/main.py"]
    assert raw["config"]["WorkingDir"] == CODE_DIR
    assert "BASE_VAR=1" in raw["config"]["Env"]  # the base's environment is kept

    rootfs = unpack(registry, built.pull_ref, tmp_path)
    code = rootfs / CODE_DIR.lstrip("/")
    assert (rootfs / "usr/local/bin/base-tool").read_bytes().startswith(b"#!/bin/sh")
    assert mode(rootfs / "usr/local/bin/base-tool") == 0o755
    assert mode(rootfs / "etc/base-release") == 0o644
    assert (code / "main.py").read_text() == "print('hello from the cell')\n"
    assert mode(code / "main.py") == 0o755
    assert (code / "lib/util.py").read_bytes() == b"ANSWER = 42\n"
    assert mode(code / "lib/util.py") == 0o644
    assert mode(code / "lib") == 0o755

    # no credential in the logs, the error-free path's records, or any blob of the image
    secrets = [PASSWORD, base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()]
    assert not any(s in caplog.text for s in secrets)
    for blob in (tmp_path / "oci" / "blobs" / "sha256").iterdir():
        data = blob.read_bytes()
        assert not any(s.encode() in data for s in secrets)
        if data[:2] == b"\x1f\x8b":
            assert not any(s.encode() in gzip.decompress(data) for s in secrets)


def test_same_code_twice_same_tag_and_digest_in_at_most_3_requests(
    registry, layouts, docker_config
):
    cfg = login(registry, docker_config)
    base = base_in(registry, layouts, "oci")
    target = f"{registry.host}/team/ddl-twice"
    first = build_and_push(make_bundle("print(2)\n"), base=base, target_repo=target, config=cfg)
    mark = registry.mark()
    second = build_and_push(make_bundle("print(2)\n"), base=base, target_repo=target, config=cfg)
    lines = registry.access_lines(mark)
    assert (second.tag, second.digest) == (first.tag, first.digest)
    assert not second.pushed
    # the manifest GET of the base and the tag HEAD; a 401 first where a login is needed
    assert len(lines) == (3 if registry.needs_login else 2) <= 3, lines
    assert second.target_stats.requests == len(lines)
    assert not [m for m, _, _ in lines if m in ("POST", "PUT", "PATCH")]
    assert second.stats.bytes_up == 0 and second.stats.blobs_uploaded == 0
    client = RegistryClient(
        registry.host, credentials=CredentialStore.from_docker_config(), ca=cfg.registry_ca
    )
    client.ping()  # reachable and logged in
    assert client.stats.requests == (2 if registry.needs_login else 1)


def test_bad_input_gives_one_line_errors(registry, layouts, docker_config, tmp_path):
    """Each variant meets the failure it can produce; every message is one line, names
    the registry, and carries no credential."""
    cfg = login(registry, docker_config)
    base = base_in(registry, layouts, "oci")
    target = f"{registry.host}/team/ddl-errors"
    bundle = make_bundle()
    errors: list[str] = []

    with pytest.raises(RegistryError, match="not found") as e:
        build_and_push(
            bundle, base=f"{registry.host}/bases/absent:1", target_repo=target, config=cfg
        )
    errors.append(str(e.value))

    if registry.variant in ("basic", "token"):
        login(registry, docker_config, password="wrong-password")
        with pytest.raises(RegistryError, match="refused the credentials") as e:
            build_and_push(bundle, base=base, target_repo=target, config=cfg)
        errors.append(str(e.value))
        (docker_config / "config.json").unlink()
        with pytest.raises(RegistryError, match="needs a login") as e:
            build_and_push(bundle, base=base, target_repo=target, config=cfg)
        errors.append(str(e.value))
    if registry.variant == "tls":
        with pytest.raises(RegistryError, match="TLS to registry .* failed .*registry_ca") as e:
            build_and_push(bundle, base=base, target_repo=target, config=Config())
        errors.append(str(e.value))
    if registry.variant == "token":  # the token service grants pull only under readonly/
        login(registry, docker_config)
        with pytest.raises(RegistryError, match="denied access") as e:
            build_and_push(bundle, base=base, target_repo=f"{registry.host}/readonly/x", config=cfg)
        errors.append(str(e.value))
    if registry.variant == "plain":
        from .registries import free_port

        down = f"127.0.0.1:{free_port()}"
        with pytest.raises(RegistryError, match="not reachable") as e:
            build_and_push(
                bundle, base=f"{down}/bases/small:base", target_repo=f"{down}/t/x", config=cfg
            )
        errors.append(str(e.value))
    for msg in errors:
        assert "\n" not in msg and (registry.host in msg or "127.0.0.1" in msg), msg
        assert PASSWORD not in msg and "wrong-password" not in msg, msg


def test_credentials_from_a_credential_helper(
    registry, layouts, docker_config, tmp_path, monkeypatch
):
    """``credHelpers`` → ``docker-credential-<name> get`` on PATH (a tiny script)."""
    cfg = Config(registry_ca=str(registry.ca) if registry.ca else None)
    base = base_in(registry, layouts, "oci")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    helper = bindir / "docker-credential-ddltest"
    calls = tmp_path / "helper-calls"
    helper.write_text(
        '#!/bin/sh\nread server\necho "$server" >> ' + str(calls) + "\n"
        f'printf \'{{"ServerURL":"%s","Username":"{USER}","Secret":"{PASSWORD}"}}\' "$server"\n'
    )
    helper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    (docker_config / "config.json").write_text(
        json.dumps({"credHelpers": {registry.host: "ddltest"}})
    )
    built = build_and_push(
        make_bundle("print('helper')\n"),
        base=base,
        target_repo=f"{registry.host}/team/ddl-helper",
        config=cfg,
    )
    assert built.pushed
    assert calls.read_text().split() == [registry.host]
