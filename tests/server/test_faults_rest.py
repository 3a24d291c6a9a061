"""The REST API against real local jobs when the input is hostile or the files are bad:
every route and query argument that names a file refuses names outside the job, a
corrupt job file is an answer (never a 500), and a --secret-env value appears in no
answer."""

from __future__ import annotations

import ast
import inspect
import json
import re
import textwrap
import time
from urllib.parse import quote

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_ddl.server.handlers import DDLHandler
from jupyter_ddl.server.routes import routes as handlers_routes

from .conftest import get_json
from .test_auth import _registered_handlers

pytestmark = pytest.mark.timeout(120)

OUTSIDE = "ddl-outside-secret"
#: query arguments whose value names something on disk (a replica's log file)
FILE_ARGS = {"replica"}
TRAVERSALS = [
    "../../outside",
    "../../../../../../../var/log/dpkg",
    "worker-0/../../../outside",
    "/etc/passwd",
    "..",
    "nosuch",
]
CELL = "import os\nprint('hello from', rank, 'secret length', len(os.environ.get('REST_SECRET', '')), flush=True)\n"  # fmt: skip


def _query_args(handler: type) -> dict[str, set[str]]:
    """Per HTTP method of ``handler``, the query arguments its code reads."""
    out: dict[str, set[str]] = {}
    for method in ("get", "post", "put", "patch", "delete"):
        fn = getattr(handler, method)
        if fn is getattr(DDLHandler, method):
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(handler)))
        names = set()
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("arg", "get_query_argument")
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names.add(node.args[0].value)
        out[method.upper()] = names
    return out


def _path(pattern: str, job: str) -> str:
    """The route's URL for job ``job`` (quoted: a "/" in it stays in one segment)."""
    return re.sub(r"\(\?P<name>[^)]*\)", quote(job, safe=""), pattern).lstrip("/")


def _submit(manager, name: str, **fields) -> None:
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.models import JobSpec

    spec = JobSpec(name=name, strategy="tf-multi-worker-mirrored", replicas={"Worker": 2}, **fields)
    manager.submit(spec, build_bundle(CELL))


def _finished(manager, name: str) -> None:
    deadline = time.monotonic() + 60
    while not manager.get(name, "local").state.finished:
        assert time.monotonic() < deadline, "the job did not finish"
        time.sleep(0.2)


async def _fetch(jp_fetch, path: str, **params):
    """(status, body text) for GET path (already URL-encoded) with query params."""
    try:
        r = await jp_fetch(path, params=params or None, request_timeout=30)
    except HTTPClientError as e:
        return e.code, (e.response.body.decode() if e.response and e.response.body else "")
    return r.code, r.body.decode()


async def test_every_route_and_argument_naming_a_file_stays_inside_the_job(jp_fetch, ddl_app, data_dir):  # fmt: skip
    _submit(ddl_app.manager, "trav")
    _finished(ddl_app.manager, "trav")
    for where in (data_dir, data_dir / "jobs"):  # where "../../outside" and "../../../outside" lead
        (where / "outside.log").write_text(f"2026-01-01T00:00:00.000000Z stdout {OUTSIDE}\n")
    handlers = _registered_handlers(ddl_app.serverapp.web_app)
    routes = [(p, h) for p, h in handlers_routes() if h in handlers]
    checked: list[tuple[str, str, str]] = []
    for pattern, handler in routes:
        for method, args in _query_args(handler).items():
            if method != "GET":
                continue
            for arg in sorted(args & FILE_ARGS):
                for bad in TRAVERSALS:
                    for extra in ({}, {"follow": "true"}) if "follow" in args else ({},):
                        code, body = await _fetch(
                            jp_fetch, _path(pattern, "trav"), **{arg: bad}, **extra
                        )
                        assert code == 404, (pattern, arg, bad, extra, code, body)
                        assert json.loads(body)["error"] == "JobNotFound"
                        assert "its replicas: worker-0, worker-1" in json.loads(body)["message"]
                        assert OUTSIDE not in body
                        checked.append((handler.__name__, arg, bad))
            if "(?P<name>" in pattern:
                for bad in ("..", "../jobs/trav", "../../outside", ".trav"):
                    code, body = await _fetch(jp_fetch, _path(pattern, bad))
                    assert code == 404 and OUTSIDE not in body, (pattern, bad, code, body)
    # guards the enumeration: the log and metrics routes read `replica`
    assert {h for h, _, _ in checked} == {"LogsHandler", "MetricsHandler"}
    code, body = await _fetch(jp_fetch, "jupyter-ddl/jobs/trav/logs", replica="worker-1")
    assert code == 200 and "hello from 1" in body


async def test_a_corrupt_status_is_shown_not_a_500(jp_fetch, ddl_app, data_dir):
    _submit(ddl_app.manager, "broken")
    _finished(ddl_app.manager, "broken")
    (data_dir / "jobs" / "broken" / "status.json").write_text('{"state": "Exploded"}')
    deadline = time.monotonic() + 10  # Failed once its supervisor has exited
    while True:
        listed = await get_json(jp_fetch, "jupyter-ddl", "jobs")
        row = next(j for j in listed["jobs"] if j["name"] == "broken")
        assert row["message"].startswith("unreadable: status.json")
        if row["finished"] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert row["finished"]
    detail = await get_json(jp_fetch, "jupyter-ddl", "jobs", "broken")
    assert detail["state"] == "Failed" and detail["spec"]["replicas"]["Worker"] == 2
    page = await get_json(jp_fetch, "jupyter-ddl", "jobs", "broken", "logs")
    assert any("hello from 0" in line["text"] for line in page["lines"])  # nothing lost
    r = await jp_fetch("jupyter-ddl", "jobs", "broken", method="DELETE")
    assert r.code == 204


async def test_a_secret_env_value_is_in_no_answer(jp_fetch, ddl_app, monkeypatch):
    value = "v4lue-9c2e-rest"
    monkeypatch.setenv("REST_SECRET", value)
    _submit(ddl_app.manager, "sec", secret_env=["REST_SECRET"], env={"PLAIN": "1"})
    _finished(ddl_app.manager, "sec")
    bodies = []
    for path, params in [
        ("jupyter-ddl/backends", {}),
        ("jupyter-ddl/jobs", {}),
        ("jupyter-ddl/jobs/sec", {}),
        ("jupyter-ddl/jobs/sec/logs", {}),
        ("jupyter-ddl/jobs/sec/logs", {"follow": "true", "replica": "worker-0"}),
        ("jupyter-ddl/jobs/sec/metrics", {}),
    ]:
        code, body = await _fetch(jp_fetch, path, **params)
        assert code == 200, (path, body)
        bodies.append(body)
    text = "\n".join(bodies)
    assert f"secret length {len(value)}" in text  # the replica had it
    assert value not in text
    assert json.loads(bodies[2])["spec"]["env_names"] == ["PLAIN"]


async def test_log_pages_are_bounded_in_bytes_too(jp_fetch, ddl_app):
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.models import JobSpec
    from jupyter_ddl.server.handlers import MAX_LOG_BYTES

    width = 700_000  # 8 lines of 700 kB: about 5.6 MB, more than one page
    cell = f"for i in range(8):\n    print(str(i) * {width}, flush=True)\n"
    spec = JobSpec(name="wide", strategy="tf-mirrored", replicas={"Worker": 1})
    ddl_app.manager.submit(spec, build_bundle(cell))
    _finished(ddl_app.manager, "wide")
    first = await get_json(jp_fetch, "jupyter-ddl", "jobs", "wide", "logs", params={"replica": "worker-0"})  # fmt: skip
    n = len(first["lines"])
    assert first["limited"] and n == -(-MAX_LOG_BYTES // width) and n < 8
    offset = str(first["next_offsets"]["worker-0"])
    rest = await get_json(jp_fetch, "jupyter-ddl", "jobs", "wide", "logs", params={"replica": "worker-0", "offset": offset})  # fmt: skip
    assert not rest["limited"]
    got = [line["text"][0] for line in first["lines"] + rest["lines"]]
    assert got == [str(i) for i in range(8)]  # every line, once, in order
