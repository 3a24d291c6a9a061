"""Fixtures: a running API double (with its operator and kubelet) and a backend
connected to it through a real kubeconfig and the real ``kubernetes`` client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jupyter_ddl.config import Config
from tests.support.require import module

module("kubernetes")

from jupyter_ddl.backends.kubernetes import KubernetesBackend  # noqa: E402

from .apidouble import ApiDouble  # noqa: E402


@pytest.fixture
def double() -> Iterator[ApiDouble]:
    with ApiDouble() as d:
        yield d


@pytest.fixture
def kubeconfig(double, tmp_path):
    return double.kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def make_backend(kubeconfig, tmp_path):
    made: list[KubernetesBackend] = []

    def make(**config) -> KubernetesBackend:
        cfg = Config(backend="kubernetes", **config)
        b = KubernetesBackend(
            cfg, kubeconfig=str(kubeconfig), sa_dir=tmp_path / "no-sa", usage_every=0.5
        )
        made.append(b)
        return b

    yield make
    for b in made:
        b.close()


@pytest.fixture
def backend(make_backend, double):
    b = make_backend()
    yield b
    double.state.denied.clear()
    for job in b.list():  # cancel what is left running
        if not job.state.finished:
            b.cancel(job.name)
