"""Base and target choice, and ``JobManager.build_image`` end to end: the notebook
pod's own image is read through a Kubernetes API double over TLS that the real
``kubernetes`` client talks to."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from jupyter_ddl.config import Config
from jupyter_ddl.errors import RegistryError
from jupyter_ddl.image.plan import notebook_slug, plan_image
from jupyter_ddl.image.selection import notebook_pod_image
from jupyter_ddl.manager import JobManager
from jupyter_ddl.models import JobSpec
from tests.support.require import module

from .conftest import base_in
from .registries import Certs
from .test_registry_variants import make_bundle

pytestmark = pytest.mark.timeout(120)
TOKEN = "sa-token-for-the-test"


class PodAPI:
    """Answers ``GET /api/v1/namespaces/<ns>/pods/<name>`` for the pods it holds."""

    def __init__(self, certs: Certs, pods: dict[tuple[str, str], dict]) -> None:
        self.seen: list[tuple[str, str | None]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                api.seen.append((self.path, self.headers.get("Authorization")))
                parts = self.path.split("?")[0].strip("/").split("/")
                pod = (
                    pods.get((parts[3], parts[5]))
                    if len(parts) == 6 and parts[4] == "pods"
                    else None
                )
                body = json.dumps(
                    pod or {"kind": "Status", "code": 404, "reason": "NotFound"}
                ).encode()
                self.send_response(200 if pod else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(certs.cert, certs.key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def pod(name: str, containers: list[tuple[str, str]]) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "kubeflow-user"},
        "spec": {"containers": [{"name": n, "image": i} for n, i in containers]},
    }


@pytest.fixture
def in_pod(certs: Certs, tmp_path: Path) -> Iterator[tuple[dict[str, str], Path, PodAPI]]:
    """The environment and service-account directory of a notebook pod ``my-notebook-0``."""
    module("kubernetes")
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text(TOKEN)
    (sa / "ca.crt").write_bytes(certs.ca.read_bytes())
    (sa / "namespace").write_text("kubeflow-user\n")
    pods = {
        ("kubeflow-user", "my-notebook-0"): pod(
            "my-notebook-0",
            [("istio-proxy", "istio/proxyv2:1"), ("my-notebook", "reg.io/team/nb:3")],
        )
    }
    api = PodAPI(certs, pods)
    env = {
        "HOSTNAME": "my-notebook-0",
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(api.port),
    }
    try:
        yield env, sa, api
    finally:
        api.close()


def test_slug_and_target():
    assert notebook_slug("work/Train Model (v2).ipynb") == "train-model-v2"
    assert notebook_slug(None) == notebook_slug("???.ipynb") == "notebook"
    spec = JobSpec(name="j", strategy="torch-ddp", notebook="a/MNIST.ipynb")
    plan = plan_image(spec, None, Config(registry="r.io:5000/team/"))
    assert plan.repository == "r.io:5000/team/ddl-mnist" and plan.in_image
    assert plan.reference == "r.io:5000/team/ddl-mnist:code-nocode-<base digest>"
    unshipped = plan_image(spec, None, Config())  # no registry: the base runs a ConfigMap
    assert (unshipped.repository, unshipped.reference) == (None, Config().base_images["pytorch"])


def test_base_choice_order(in_pod):
    env, sa, api = in_pod
    cfg = Config()
    spec = JobSpec(name="j", strategy="torch-ddp")

    def base(s: JobSpec, e: dict[str, str], c: Config = cfg) -> str:
        return plan_image(s, None, c, notebook_pod_image(e, sa)).base

    assert base(JobSpec(name="j", strategy="torch-ddp", image="mine:1"), env) == "mine:1"
    assert base(spec, env) == "reg.io/team/nb:3"  # the notebook's own container
    assert api.seen[-1] == (
        "/api/v1/namespaces/kubeflow-user/pods/my-notebook-0",
        f"bearer {TOKEN}",
    )  # the client spells it so
    # another pod name (not readable) or no pod at all: the framework default
    assert base(spec, {**env, "HOSTNAME": "other-0"}) == cfg.base_images["pytorch"]
    assert base(spec, {}) == cfg.base_images["pytorch"]
    assert notebook_pod_image({**env, "KUBERNETES_SERVICE_PORT": "1"}, sa) is None  # API down
    with pytest.raises(RegistryError, match="no base image for pytorch") as e:
        base(spec, {}, Config(base_images={}))
    assert "\n" not in str(e.value) and "%ddl config base_images=" in str(e.value)


def test_manager_build_image_end_to_end(plain_registry, layouts, docker_config, monkeypatch):
    base = base_in(plain_registry, layouts, "oci", repo="bases/manager")
    cfg = Config(registry=f"{plain_registry.host}/team", base_images={"pytorch": base})
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    manager = JobManager(config=cfg)
    spec = JobSpec(name="j", strategy="torch-ddp", notebook="work/Train Model.ipynb")
    built = manager.build_image(spec, make_bundle("print('manager')\n"))
    assert built.repository == f"{plain_registry.host}/team/ddl-train-model"
    assert built.base.startswith(f"{plain_registry.host}/bases/manager:base@sha256:")
    again = manager.build_image(spec, make_bundle("print('manager')\n"))
    assert (again.digest, again.pushed) == (built.digest, False)
    with pytest.raises(RegistryError, match="no image registry"):
        JobManager(config=Config()).build_image(spec, make_bundle())
