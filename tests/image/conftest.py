"""Fixtures: real docker-registry processes (four variants), base images pushed with
skopeo, and an isolated docker config for the credentials the builder reads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_ddl.config import Config
from tests.support.require import executable

from .bases import make_layout, push_base
from .registries import VARIANTS, Certs, Registry, make_certs, start_registry


@pytest.fixture(scope="session")
def tools() -> None:
    for name in ("docker-registry", "skopeo", "umoci", "htpasswd"):
        executable(name)


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="session")
def layouts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """OCI layouts of the small bases: one image, and an amd64+arm64 index."""
    root = tmp_path_factory.mktemp("layouts")
    return {
        kind: make_layout(root / kind, "index" if kind == "index" else "oci")
        for kind in ("oci", "index")
    }


def _start(variant: str, factory: pytest.TempPathFactory, certs: Certs) -> Iterator[Registry]:
    reg = start_registry(variant, factory.mktemp(f"registry-{variant}"), certs)
    try:
        yield reg
    finally:
        reg.stop()


@pytest.fixture(scope="module", params=VARIANTS)
def registry(request, tools, tmp_path_factory, certs) -> Iterator[Registry]:
    """One registry per variant: plain, basic, tls, token."""
    yield from _start(request.param, tmp_path_factory, certs)


@pytest.fixture(scope="module")
def plain_registry(tools, tmp_path_factory, certs) -> Iterator[Registry]:
    yield from _start("plain", tmp_path_factory, certs)


@pytest.fixture(scope="module")
def other_registry(tools, tmp_path_factory, certs) -> Iterator[Registry]:
    """A second plain registry, for bases that live elsewhere."""
    yield from _start("plain", tmp_path_factory, certs)


@pytest.fixture
def docker_config(tmp_path, monkeypatch) -> Path:
    """An empty, isolated ``$DOCKER_CONFIG``; tests write logins into it."""
    d = tmp_path / "docker-config"
    d.mkdir()
    monkeypatch.setenv("DOCKER_CONFIG", str(d))
    return d


def login(reg: Registry, docker_config: Path, password: str | None = None) -> Config:
    """Store ``reg``'s login in the docker config; returns a Config trusting its CA."""
    if reg.needs_login:
        reg.docker_config(docker_config, **({"password": password} if password else {}))
    return Config(registry_ca=str(reg.ca) if reg.ca else None)


def base_in(reg: Registry, layouts: dict[str, Path], kind: str, repo: str = "bases/small") -> str:
    layout = layouts["index" if kind in ("index", "list") else "oci"]
    return push_base(reg, layout, repo, kind)
