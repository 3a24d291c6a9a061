"""The notebook pod's own image as the base of a dry run and a build: the Kubernetes
backend reads the pod (the one read of it, as at submit) and the manager passes the
image to the plan. Over the API double, through the real ``kubernetes`` client."""

from __future__ import annotations

import re
import socket

import pytest

from jupyter_ddl.config import Config
from jupyter_ddl.image.plan import plan_image
from jupyter_ddl.manager import JobManager
from jupyter_ddl.models import JobSpec

POD = "/api/v1/namespaces/team-a/pods/my-notebook-0"


@pytest.fixture
def in_notebook(double, kubeconfig, monkeypatch):
    """A Kubeflow notebook ``my-notebook-0`` whose pod has a sidecar before it."""
    monkeypatch.setenv("NB_PREFIX", "/notebook/team-a/my-notebook")
    monkeypatch.setenv("HOSTNAME", "my-notebook-0")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    double.store.create("core/v1/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "my-notebook-0", "namespace": "team-a"},
        "spec": {"containers": [{"name": "istio-proxy", "image": "istio/proxyv2:1"},
                                {"name": "my-notebook", "image": "reg.io/team/nb:3"}]},
        "status": {"phase": "Running"}})  # fmt: skip


def test_the_backend_reads_the_notebook_pods_image(in_notebook, make_backend, double):
    assert make_backend().notebook_image() == "reg.io/team/nb:3"
    assert len(double.requests("GET", POD)) == 1
    spec = JobSpec(name="j", strategy="torch-ddp")
    assert plan_image(spec, None, Config(), "reg.io/team/nb:3").base == "reg.io/team/nb:3"


def test_a_dry_run_reads_the_pod_once_through_the_backend(in_notebook, double):
    spec = JobSpec(name="j", strategy="torch-ddp", backend="kubernetes")
    manager = JobManager(config=Config(backend="kubernetes"))
    try:
        yaml = manager.dry_run(spec)
    finally:
        manager.close()
    assert "image: reg.io/team/nb:3" in yaml
    assert len(double.requests("GET", POD)) == 1


def test_outside_a_notebook_or_with_no_pod_to_read_the_base_is_the_default(
    in_notebook, make_backend, double, monkeypatch
):
    monkeypatch.setenv("HOSTNAME", "other-0")  # a pod of another name: not readable
    assert make_backend().notebook_image() is None
    monkeypatch.delenv("NB_PREFIX")  # not a Kubeflow notebook: nothing is asked
    before = len(double.requests())
    assert make_backend().notebook_image() is None
    assert len(double.requests()) == before
    spec = JobSpec(name="j", strategy="torch-ddp")
    assert plan_image(spec, None, Config(), None).base == Config().base_images["pytorch"]


def test_a_cluster_that_does_not_answer_leaves_the_default_base(
    in_notebook, kubeconfig, monkeypatch
):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    text = re.sub(r"server: https?://127\.0\.0\.1:\d+", f"server: https://127.0.0.1:{closed}",
                  kubeconfig.read_text())  # fmt: skip
    assert str(closed) in text
    kubeconfig.write_text(text)
    manager = JobManager(config=Config(backend="kubernetes"))
    try:
        spec = JobSpec(name="j", strategy="torch-ddp", backend="kubernetes")
        assert f"image: {Config().base_images['pytorch']}" in manager.dry_run(spec)
    finally:
        manager.close()
