"""The OpenAPI document (jupyter_ddl/server/openapi.json) matches the routes the
extension serves, is served itself, names the same paths as docs/rest-api.md, and the
live answers of a jupyter_server on loopback fit its schemas (errors included)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import jsonschema
import pytest
from tornado.httpclient import HTTPClientError

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.models import JobSpec
from jupyter_ddl.server.handlers import OPENAPI
from jupyter_ddl.server.routes import routes

pytestmark = pytest.mark.timeout(60)
DOC = json.loads(OPENAPI.read_text())
ROOT = Path(__file__).resolve().parents[2]
METHODS = ("get", "post", "put", "patch", "delete")


def _path(pattern: str) -> str:
    return re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", pattern)


def test_every_route_and_method_is_documented_and_nothing_else():
    served = {
        _path(pattern): {m for m in METHODS if m in handler.__dict__}
        for pattern, handler in routes("/")
    }
    documented = {p: {m for m in ops if m in METHODS} for p, ops in DOC["paths"].items()}
    assert documented == served


def test_the_prose_names_every_path():
    prose = (ROOT / "docs" / "rest-api.md").read_text()
    for path, ops in DOC["paths"].items():
        for method in ops:
            assert f"{method.upper()} {path}" in prose, (method, path)


def _schema(path: str, method: str, status: int, mime: str = "application/json") -> dict:
    answer = DOC["paths"][path][method]["responses"][str(status)]
    if "$ref" in answer:
        answer = DOC["components"]["responses"][answer["$ref"].rsplit("/", 1)[1]]
    return answer["content"][mime]["schema"]


def _fits(body: bytes, schema: dict) -> dict:
    data = json.loads(body, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    jsonschema.validate(data, schema, cls=jsonschema.Draft202012Validator)
    return data


async def test_live_answers_fit_the_document(jp_fetch, fake_manager):
    spec = JobSpec(name="api-a", strategy="torch-ddp", replicas={"Master": 1, "Worker": 1})
    fake = fake_manager.backend("local")
    fake.submit(spec, build_bundle("x = 1"))
    fake.start("api-a")
    fake.metric("api-a", "master-0", 0, loss=math.nan)
    served = _fits((await jp_fetch("jupyter-ddl", "openapi.json")).body, {"type": "object"})
    assert served == DOC
    cases = [
        ("/jupyter-ddl/backends", ("backends",), {}),
        ("/jupyter-ddl/strategies", ("strategies",), {}),
        ("/jupyter-ddl/jobs", ("jobs",), {"state": "Running"}),
        ("/jupyter-ddl/jobs/{name}", ("jobs", "api-a"), {}),
        ("/jupyter-ddl/jobs/{name}/logs", ("jobs", "api-a", "logs"), {"tail": "5"}),
        ("/jupyter-ddl/jobs/{name}/metrics", ("jobs", "api-a", "metrics"), {}),
    ]
    for path, parts, params in cases:
        r = await jp_fetch("jupyter-ddl", *parts, params=params)
        _fits(r.body, _schema(path, "get", 200))
    bad = [
        ("/jupyter-ddl/jobs", ("jobs",), {"state": "Sleeping"}, 400),
        ("/jupyter-ddl/jobs", ("jobs",), {"backend": "nope"}, 400),  # found by the fuzz run
        ("/jupyter-ddl/jobs/{name}", ("jobs", "api-a"), {"backend": "\x89"}, 400),
        ("/jupyter-ddl/jobs/{name}", ("jobs", "nope"), {}, 404),
        ("/jupyter-ddl/jobs/{name}/logs", ("jobs", "api-a", "logs"), {"tail": "9" * 30}, 400),
        ("/jupyter-ddl/jobs/{name}/metrics", ("jobs", "api-a", "metrics"), {"offset": "-1"}, 400),
    ]
    for path, parts, params, status in bad:
        with pytest.raises(HTTPClientError) as e:
            await jp_fetch("jupyter-ddl", *parts, params=params)
        assert e.value.code == status
        _fits(e.value.response.body, _schema(path, "get", status))
    r = await jp_fetch("jupyter-ddl", "jobs", "api-a", "cancel", method="POST", body=b"")
    _fits(r.body, _schema("/jupyter-ddl/jobs/{name}/cancel", "post", 200))


def _events(stream: str) -> list[dict]:
    """The events of a server-sent stream as the document describes each: its fields."""
    out = []
    for frame in stream.split("\n\n"):
        fields = dict(ln.split(": ", 1) for ln in frame.splitlines() if not ln.startswith(":"))
        if fields:
            out.append(fields)
    return out


def test_every_event_a_stream_sends_fits_the_documented_event():
    """For OpenAPI 3.1, a text/event-stream schema describes one event (its fields), as
    the fuzz run reads it: not a string for the whole stream."""
    from jupyter_ddl.models import LogLine
    from jupyter_ddl.server.job_stream import snapshot_frame
    from jupyter_ddl.server.sse import format_event, log_event

    streams = {
        ("/jupyter-ddl/jobs/{name}/logs", "LogEvent"): ": stream open\n\n"
        + log_event(LogLine(replica="worker-0", offset=3, text="step=1 loss=nan"))
        + format_event("end", {"name": "a", "metrics": {"loss": math.nan}})
        + format_event("error", {"message": "the job was deleted"}),
        ("/jupyter-ddl/events", "JobListEvent"): snapshot_frame({}, [])
        + format_event("removed", {"backend": "local", "name": "a"}),
    }
    for (path, component), stream in streams.items():
        schema = _schema(path, "get", 200, "text/event-stream")
        assert schema == {"$ref": f"#/components/schemas/{component}"}
        events = _events(stream)
        assert len(events) >= 2
        for event in events:
            jsonschema.validate(
                event, DOC["components"]["schemas"][component], cls=jsonschema.Draft202012Validator
            )
            json.loads(event["data"])
