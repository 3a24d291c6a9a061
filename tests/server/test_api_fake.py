"""The REST contract on the in-memory backend: filters, errors, SSE framing."""

from __future__ import annotations

import json
import time

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.core.strategies import CATALOG
from jupyter_ddl.models import JobSpec
from tests.support.fake_backend import steps

from .conftest import get_json

pytestmark = pytest.mark.timeout(60)


def _submit(manager, name, notebook="a.ipynb", workers=2, lines=1000, **env):
    spec = JobSpec(
        name=name,
        strategy="torch-ddp",
        replicas={"Master": 1, "Worker": workers - 1},
        notebook=notebook,
        env=env,
    )
    manager.backend("local").submit(spec, build_bundle(steps(lines)))
    return spec


async def _error(jp_fetch, *parts, **kw):
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch(*parts, **kw)
    return info.value.code, json.loads(info.value.response.body)


async def test_list_filters_by_state_and_notebook(jp_fetch, fake_manager):
    _submit(fake_manager, "job-a", notebook="a.ipynb")
    _submit(fake_manager, "job-b", notebook="b.ipynb")
    fake_manager.cancel("job-b", "local")
    all_jobs = await get_json(jp_fetch, "jupyter-ddl", "jobs")
    assert {j["name"] for j in all_jobs["jobs"]} == {"job-a", "job-b"}
    running = await get_json(jp_fetch, "jupyter-ddl", "jobs", params={"state": "running"})
    assert [j["name"] for j in running["jobs"]] == ["job-a"]
    row = running["jobs"][0]
    assert (row["ready"], row["total"], row["strategy"]) == (2, 2, "torch-ddp")
    done = await get_json(jp_fetch, "jupyter-ddl", "jobs", params={"state": "Cancelled,Failed"})
    assert [j["name"] for j in done["jobs"]] == ["job-b"]
    by_nb = await get_json(jp_fetch, "jupyter-ddl", "jobs", params={"notebook": "b.ipynb"})
    assert [j["name"] for j in by_nb["jobs"]] == ["job-b"]


async def test_bad_input_is_a_400_with_one_line(jp_fetch, fake_manager):
    code, body = await _error(jp_fetch, "jupyter-ddl", "jobs", params={"state": "Sleeping"})
    assert code == 400 and body["error"] == "ValidationError"
    assert "Sleeping" in body["message"] and "Running" in body["message"]
    assert "\n" not in body["message"]
    _submit(fake_manager, "job-c")
    code, body = await _error(
        jp_fetch, "jupyter-ddl", "jobs", "job-c", "logs", params={"offset": "-3"}
    )
    assert code == 400 and "offset" in body["message"]
    for param in ("tail", "offset", "limit"):
        for huge in ("99999999999999999999999", "1000000001", "9" * 5000):
            code, body = await _error(
                jp_fetch, "jupyter-ddl", "jobs", "job-c", "logs", params={param: huge}
            )
            assert code == 400 and param in body["message"], (param, huge, body)
            assert len(body["message"]) < 200
    code, body = await _error(
        jp_fetch, "jupyter-ddl", "jobs", "job-c", "metrics", params={"offset": "9" * 30}
    )
    assert code == 400


async def test_unknown_job_is_404_everywhere(jp_fetch, fake_manager):
    for parts, method in [
        (("jobs", "nope"), "GET"),
        (("jobs", "nope"), "DELETE"),
        (("jobs", "nope", "cancel"), "POST"),
        (("jobs", "nope", "logs"), "GET"),
        (("jobs", "nope", "metrics"), "GET"),
    ]:
        body = b"" if method == "POST" else None
        code, err = await _error(jp_fetch, "jupyter-ddl", *parts, method=method, body=body)
        assert code == 404, parts
        assert err["error"] == "JobNotFound" and "nope" in err["message"]


async def test_detail_hides_env_values(jp_fetch, fake_manager):
    _submit(fake_manager, "job-d", API_KEY="s3cr3t-value")
    detail = await get_json(jp_fetch, "jupyter-ddl", "jobs", "job-d")
    assert detail["spec"]["env_names"] == ["API_KEY"]
    assert "s3cr3t-value" not in json.dumps(detail)
    assert [r["id"] for r in detail["replicas"]] == ["master-0", "worker-0"]
    assert detail["actions"]["cancel"] is True


async def test_backends_lists_every_backend(jp_fetch, fake_manager):
    body = await get_json(jp_fetch, "jupyter-ddl", "backends")
    names = [b["name"] for b in body["backends"]]
    assert "local" in names and "kubernetes" in names
    local = next(b for b in body["backends"] if b["name"] == "local")
    assert local["available"] and local["capabilities"]["strategies"] == list(CATALOG)
    for b in body["backends"]:
        assert b["available"] or b["error"]


async def test_follow_streams_sse_until_the_job_ends(jp_fetch, fake_manager):
    _submit(fake_manager, "job-e", lines=20)
    chunks: list[bytes] = []
    await jp_fetch(
        "jupyter-ddl",
        "jobs",
        "job-e",
        "logs",
        params={"follow": "true", "replica": "worker-0", "offset": "5"},
        streaming_callback=chunks.append,
    )
    text = b"".join(chunks).decode()
    frames = [f for f in text.split("\n\n") if f.startswith("id:")]
    offsets = [json.loads(f.split("data: ", 1)[1])["offset"] for f in frames]
    assert offsets == list(range(5, 20))
    assert frames[0].startswith("id: worker-0:5\nevent: log\n")
    end = text.rsplit("event: end\ndata: ", 1)[1]
    assert json.loads(end.strip())["state"] == "Succeeded"


async def test_follow_resumes_from_last_event_id(jp_fetch, fake_manager):
    _submit(fake_manager, "job-f", lines=10)
    chunks: list[bytes] = []
    await jp_fetch(
        "jupyter-ddl",
        "jobs",
        "job-f",
        "logs",
        params={"follow": "1", "replica": "master-0"},
        headers={"Last-Event-ID": "master-0:6"},
        streaming_callback=chunks.append,
    )
    ids = [ln for ln in b"".join(chunks).decode().splitlines() if ln.startswith("id:")]
    assert ids == ["id: master-0:7", "id: master-0:8", "id: master-0:9"]


async def test_logs_page_and_metrics(jp_fetch, fake_manager):
    _submit(fake_manager, "job-g", lines=8)
    fake_manager.wait("job-g", timeout=10)
    page = await get_json(
        jp_fetch, "jupyter-ddl", "jobs", "job-g", "logs", params={"offset": "3", "limit": "4"}
    )
    assert [(ln["replica"], ln["offset"]) for ln in page["lines"]][:2] == [
        ("master-0", 3),
        ("master-0", 4),
    ]
    assert page["limited"] is True and page["next_offsets"]["master-0"] == 7
    tail = await get_json(
        jp_fetch,
        "jupyter-ddl",
        "jobs",
        "job-g",
        "logs",
        params={"replica": "worker-0", "tail": "2"},
    )
    assert [ln["offset"] for ln in tail["lines"]] == [6, 7]
    metrics = await get_json(jp_fetch, "jupyter-ddl", "jobs", "job-g", "metrics")
    assert metrics["replica"] == "master-0" and metrics["next_offset"] == 8
    assert [p["step"] for p in metrics["points"]] == list(range(8))
    assert metrics["points"][1]["values"]["loss"] == pytest.approx(0.5)
    more = await get_json(
        jp_fetch, "jupyter-ddl", "jobs", "job-g", "metrics", params={"offset": "8"}
    )
    assert more["points"] == [] and more["next_offset"] == 8


async def test_cancel_then_delete(jp_fetch, fake_manager):
    _submit(fake_manager, "job-h")
    r = await jp_fetch("jupyter-ddl", "jobs", "job-h", "cancel", method="POST", body=b"")
    assert json.loads(r.body)["state"] == "Cancelled"
    r = await jp_fetch("jupyter-ddl", "jobs", "job-h", method="DELETE")
    assert r.code == 204
    code, _ = await _error(jp_fetch, "jupyter-ddl", "jobs", "job-h")
    assert code == 404


async def test_client_disconnect_stops_the_stream(jp_fetch, fake_manager, ddl_app):
    _submit(fake_manager, "job-i")  # 1000 lines at 20/s: far longer than this test
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch(
            "jupyter-ddl",
            "jobs",
            "job-i",
            "logs",
            params={"follow": "1"},
            streaming_callback=lambda _: None,
            request_timeout=1.0,
        )
    assert info.value.code == 599  # our client gave up: the server must notice
    deadline = time.monotonic() + 5
    while ddl_app._streams and time.monotonic() < deadline:
        await _sleep(0.1)
    assert not ddl_app._streams


async def _sleep(s):
    import asyncio

    await asyncio.sleep(s)
