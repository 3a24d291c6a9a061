"""A pod's imagePullSecrets read as the kubelet reads them (dockerconfigjson and
dockercfg Secrets, keys matched by host, port and path), and the node agent's pull
logging in to real registries that ask for it: htpasswd (Basic) and a token server
(Bearer)."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.test_nodeagent_pull import LOWER, _layered
from tests.image.bases import push_base
from tests.image.registries import PASSWORD, USER, Registry, start_registry
from tests.support.require import executable

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cluster"))

from nodeagent import auth
from nodeagent.pull import Puller, PullFailed


def _b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def _secret(kind: str, auths: dict) -> dict:
    if kind == "kubernetes.io/dockercfg":
        return {"type": kind, "data": {".dockercfg": _b64(json.dumps(auths))}}
    return {"type": kind, "data": {".dockerconfigjson": _b64(json.dumps({"auths": auths}))}}


def _pod(*names: str) -> dict:
    return {"spec": {"imagePullSecrets": [{"name": n} for n in names]}}


def test_the_keyring_reads_both_secret_types_and_matches_as_the_kubelet():
    secrets = {
        "json": _secret(
            "kubernetes.io/dockerconfigjson",
            {
                "https://reg.example:5000/v2/": {"auth": _b64("a:pw-a")},
                "reg.example:5000/team": {"username": "t", "password": "pw-t"},
                "*.corp.example": {"auth": _b64("w:pw-w")},
            },
        ),
        "cfg": _secret("kubernetes.io/dockercfg", {"other.example": {"auth": _b64("o:pw-o")}}),
        "broken": {"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "%%"}},
    }
    ring = auth.keyring(_pod("missing", "broken", "json", "cfg"), lambda kind, n: secrets.get(n))
    # the more specific key first; both match an image under /team
    assert auth.lookup(ring, "reg.example:5000/team/app:1") == [("t", "pw-t"), ("a", "pw-a")]
    assert auth.lookup(ring, "reg.example:5000/other/app@sha256:" + "0" * 64) == [("a", "pw-a")]
    assert auth.lookup(ring, "reg.example/team/app") == []  # another port
    assert auth.lookup(ring, "eu.corp.example/x") == [("w", "pw-w")]  # a glob per part
    assert auth.lookup(ring, "a.eu.corp.example/x") == []  # not as many parts
    assert auth.lookup(ring, "other.example/x") == [("o", "pw-o")]
    assert auth.challenge('Bearer realm="http://t/token",service="reg"') == (
        "bearer",
        {"realm": "http://t/token", "service": "reg"},
    )


@pytest.fixture(scope="module", params=["basic", "token"])
def guarded(request, tmp_path_factory) -> Iterator[Registry]:
    for name in ("docker-registry", "skopeo", "htpasswd"):
        executable(name)
    reg = start_registry(request.param, tmp_path_factory.mktemp(request.param))
    yield reg
    reg.stop()


def test_a_registry_that_asks_for_a_login_is_pulled_with_the_pods_secret(tmp_path, guarded):
    image = push_base(guarded, _layered(tmp_path / "layout", [LOWER], []), "team/private")
    listed = tmp_path / "registries"
    listed.write_text(f"http://{guarded.host}\n")
    puller = Puller(tmp_path / "images", listed)
    with pytest.raises(PullFailed) as refused:
        puller.ensure({"image": image})
    assert refused.value.reason == "ErrImagePull" and "401" in refused.value.message
    wrong = {"type": "kubernetes.io/dockerconfigjson"}
    wrong["data"] = _secret(wrong["type"], {guarded.host: {"auth": _b64(f"{USER}:nope")}})["data"]
    right = _secret(
        "kubernetes.io/dockerconfigjson", {guarded.host: {"auth": _b64(f"{USER}:{PASSWORD}")}}
    )
    with pytest.raises(PullFailed):
        puller.ensure({"image": image}, auth.keyring(_pod("wrong"), lambda k, n: wrong))
    # every matching credential is tried in turn: the wrong one, then the right one
    both = {"wrong": wrong, "right": right}
    ring = auth.keyring(_pod("wrong", "right"), lambda k, n: both[n])
    got = puller.ensure({"image": image}, ring)
    assert got is not None and (got.rootfs / "etc" / "base-release").read_text() == "base\n"
    assert got.repo_digest.startswith(f"{guarded.host}/team/private@sha256:")
    # the cached image serves a pod holding that login without asking the registry...
    mark = guarded.mark()
    assert puller.ensure({"image": image}, auth.keyring(_pod("right"), lambda k, n: right)) == got
    assert guarded.access_lines(mark) == []
    # ...but a pod without it must pull, and is refused, as a 1.36 kubelet verifies
    with pytest.raises(PullFailed, match="401"):
        puller.ensure({"image": image})
