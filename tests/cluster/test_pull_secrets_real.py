"""A private image on the real tier: a registry that asks for a login (docker-registry
with htpasswd, listed in `.cluster/registries`) is pulled from with the pod's
`imagePullSecrets` (a `kubernetes.io/dockerconfigjson` Secret made as the notebook
user); a pod without the Secret waits in ErrImagePull/ImagePullBackOff with the
registry's 401. The pod with it reports the image's repo digest as its imageID, and
writes over the image's own file in its writable layer while the image stays as pulled.
"""

from __future__ import annotations

import base64
import json
import urllib.request
import uuid
from collections.abc import Iterator

import pytest

from tests.cluster.test_nodeagent_pull import LOWER, _layered
from tests.cluster.tier import ADMIN, MARKS, NAMESPACE, create, kubectl, listed_registry, wait_for
from tests.image.bases import push_base
from tests.image.registries import PASSWORD, USER, Registry

pytestmark = MARKS

MANIFEST = """
apiVersion: v1
kind: Secret
metadata: {{name: {n}}}
type: kubernetes.io/dockerconfigjson
data: {{.dockerconfigjson: {config}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: {n}-with, labels: {{app: {n}}}}}
spec:
  restartPolicy: Never
  imagePullSecrets: [{{name: {n}}}]
  containers:
  - name: main
    image: {image}
    command: [sh, -c, "cat /opt/{top}/main.py; echo changed > /opt/{top}/main.py; cat /opt/{top}/main.py"]
---
apiVersion: v1
kind: Pod
metadata: {{name: {n}-without, labels: {{app: {n}}}}}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: {image}
    command: ["true"]
"""


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> Iterator[Registry]:
    with listed_registry("basic", tmp_path_factory.mktemp("registry"), "htpasswd") as reg:
        yield reg


def _pod(name: str) -> dict:
    got = kubectl("-n", NAMESPACE, "get", "pod", name, "-o", "json", kubeconfig=ADMIN)
    return json.loads(got.stdout)  # type: ignore[no-any-return]


def _digest(registry: Registry, repo: str) -> str:
    req = urllib.request.Request(
        f"http://{registry.host}/v2/{repo}/manifests/base",
        method="HEAD",
        headers={
            "Accept": "application/vnd.oci.image.manifest.v1+json",
            "Authorization": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode(),
        },
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return str(r.headers["Docker-Content-Digest"])


def test_a_private_image_is_pulled_with_the_pods_pull_secret(tier, registry, tmp_path):
    n = f"sec-{uuid.uuid4().hex[:6]}"
    top = f"jddl-{n}"
    files = {f"opt/{top}/main.py": (b"as pulled\n", 0o644)}
    image = push_base(registry, _layered(tmp_path / "layout", [LOWER, files], []), f"team/{n}")
    auths = {registry.host: {"auth": base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()}}
    config = base64.b64encode(json.dumps({"auths": auths}).encode()).decode()
    made = create(MANIFEST.format(n=n, image=image, top=top, config=config))
    assert made.returncode == 0, made.stderr
    try:
        wait_for(f"{n}-with", lambda: _pod(f"{n}-with")["status"].get("phase") == "Succeeded", 120)
        logs = kubectl("-n", NAMESPACE, "logs", f"{n}-with").stdout.split()
        assert logs == ["as", "pulled", "changed"], logs
        cs = _pod(f"{n}-with")["status"]["containerStatuses"][0]
        assert cs["imageID"] == f"{registry.host}/team/{n}@{_digest(registry, f'team/{n}')}"

        def refused() -> str:
            w = _pod(f"{n}-without")["status"]["containerStatuses"][0]["state"].get("waiting", {})
            return (
                str(w.get("message", ""))
                if w.get("reason") in ("ErrImagePull", "ImagePullBackOff")
                else ""
            )

        said = wait_for(f"{n}-without refused", refused, 60)
        assert "401" in said and image in said, said
        # a second pod of the image sees it as pulled, not as the first one left it
        again = create(
            MANIFEST.split("---")[1]
            .format(n=n, image=image, top=top)
            .replace(f"{n}-with,", f"{n}-again,")
        )
        assert again.returncode == 0, again.stderr
        wait_for(
            f"{n}-again", lambda: _pod(f"{n}-again")["status"].get("phase") == "Succeeded", 120
        )
        logs = kubectl("-n", NAMESPACE, "logs", f"{n}-again").stdout.split()
        assert logs[:2] == ["as", "pulled"], logs
    finally:
        kubectl("-n", NAMESPACE, "delete", "pod", "-l", f"app={n}", "--wait=false", check=False)
        kubectl("-n", NAMESPACE, "delete", "secret", n, "--ignore-not-found", check=False)
