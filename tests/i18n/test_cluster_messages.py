"""The Kubernetes and registry paths' errors, rendered in each language: English word
for word as before, the others translated around what stays as it is (the action,
names, codes, the server's own words), and every field filled in."""

from __future__ import annotations

import json

import pytest

from jupyter_ddl import i18n
from jupyter_ddl.backends.kubernetes import api_errors as E
from jupyter_ddl.core.kinds import TFJOB
from jupyter_ddl.image import registry_errors as R

LANGUAGES = [code for code in i18n.LANGUAGES if code != "en"]


@pytest.fixture(autouse=True)
def _english_after():
    yield
    i18n.choose(None)


def _status(code: int, message: str) -> str:
    return json.dumps({"kind": "Status", "code": code, "message": message})


def _api_errors():
    """One error of each path of ``map_api_error`` and ``unreachable``, as (text, hint)."""
    forbidden = 'User "u" cannot list resource "pods" in API group ""'
    strict = 'strict decoding error: unknown field "spec.x"'
    refused = ConnectionRefusedError(111, "Connection refused")
    causes = [{"field": "spec.x", "message": "Invalid value"}]
    made = [
        E.map_api_error(401, "", action="listing"),
        E.map_api_error(403, _status(403, forbidden), action="listing", namespace="team-a"),
        E.map_api_error(403, _status(403, forbidden), action="listing"),
        E.map_api_error(403, _status(403, "admission webhook said no"), action="submitting"),
        E.map_api_error(404, "404 page not found", action="submitting", kind=TFJOB),
        E.map_api_error(404, json.dumps({"reason": "NotFound"}), action="reading", name="j"),
        E.map_api_error(409, "", action="submitting", name="j"),
        E.map_api_error(410, _status(410, "too old resource version"), action="watching"),
        E.map_api_error(
            400, _status(400, strict), action="submitting", kind=TFJOB, written_for="Trainer v2.3.0"
        ),  # fmt: skip
        E.map_api_error(503, _status(503, "etcd is down"), action="listing"),
        E.map_api_error(418, _status(418, "a teapot"), action="listing"),
        E.unreachable("https://10.0.0.1:6443", "connection refused"),
        R.http_failure("r.example", 404, "reading x:1", logged_in=True, detail="MANIFEST_UNKNOWN"),
        R.http_failure("r.example", 502, "pushing x:1", logged_in=True),
        R.token_failure("r.example", 401, logged_in=False),
        R.tls_failure("r.example", OSError("CERTIFICATE_VERIFY_FAILED")),
        E.unreachable(
            "https://10.0.0.1:6443", E.transport_reason(refused, connect_s=3, read_s=None)
        ),
        E.map_api_error(
            422,
            json.dumps({"details": {"causes": causes}}),
            action="submitting",
            kind=TFJOB,
            name="j",
        ),  # fmt: skip
        E.map_api_error(422, "", action="submitting"),
    ]
    return [(e.message, e.hint) for e in made]


def test_the_english_texts_are_the_ones_shown_before_they_were_marked():
    i18n.choose("en")
    said = _api_errors()
    assert said[0][0] == (
        "kubernetes: listing: the cluster refused the credentials (401 Unauthorized)"
    )
    assert said[1] == (
        "listing: the service account may not list pods in namespace team-a",
        "ask an admin to grant 'list' on 'pods' (a Role/RoleBinding)",
    )
    assert said[2][0] == "listing: the service account may not list pods"
    assert said[5][0] == "reading: j not found"
    assert said[6][0] == "submitting: a job named 'j' exists already"
    assert said[7] == (
        "watching: the watch expired (too old resource version)",
        "retry; the job is re-listed",
    )
    assert said[8][0].startswith(
        "submitting: the cluster's TFJob CRD has no field spec.x "
        "(the object was written for Trainer v2.3.0); "
    )
    assert said[9][0] == "listing: the Kubernetes API is unavailable (etcd is down)"
    assert said[10][0] == "listing: the Kubernetes API answered 418: a teapot"
    assert said[12][0] == (
        "not found on registry r.example (404, MANIFEST_UNKNOWN) while reading x:1"
    )
    assert said[15][0] == "TLS to registry r.example failed (certificate not trusted)"
    assert said[16][0] == "kubernetes: not reachable at https://10.0.0.1:6443: connection refused"
    assert said[17][0] == "submitting: the cluster refused TFJob j: spec.x: Invalid value"
    assert said[18][0] == "submitting: the cluster refused the object: "


@pytest.mark.parametrize("code", LANGUAGES)
def test_every_path_reads_in_the_language_with_its_fields_kept(code):
    i18n.choose("en")
    english = _api_errors()
    i18n.choose(code)
    for i, ((text, hint), (en_text, en_hint)) in enumerate(
        zip(_api_errors(), english, strict=True)
    ):
        # an admission webhook's refusal is shown in the server's own words
        assert (text != en_text or i == 3) and "{" not in text, (code, text)
        assert hint is None or (hint != en_hint and "{" not in hint), (code, hint)
    said = dict(enumerate(_api_errors()))
    assert "team-a" in said[1][0] and "'list'" in said[1][1] and "'pods'" in said[1][1]
    assert "too old resource version" in said[7][0]
    assert "418" in said[10][0] and "a teapot" in said[10][0]
    assert "MANIFEST_UNKNOWN" in said[12][0] and "reading x:1" in said[12][0]
    assert "connection refused" not in said[16][0]  # the transport's reason is translated too
    assert "TFJob j" in said[17][0] and "spec.x: Invalid value" in said[17][0]
