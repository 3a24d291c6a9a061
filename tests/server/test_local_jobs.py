"""The REST API against real local jobs: real replica processes, real log files."""

from __future__ import annotations

import json
import time

import pytest
from tornado.httpclient import HTTPClientError

from .conftest import get_json

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

# Prints a metric line every 0.1 s; long enough to be cancelled while running.
TRAIN = """\
import time
for step in range({steps}):
    print(f"step={{step}} loss={{1.0 / (step + 1):.4f}}", flush=True)
    time.sleep(0.1)
"""


def _submit(manager, name, steps):
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.models import JobSpec

    spec = JobSpec(
        name=name,
        strategy="torch-ddp",
        replicas={"Master": 1, "Worker": 1},
        notebook="train.ipynb",
        env={"TOKEN_FOR_TEST": "do-not-show-me"},
    )
    manager.submit(spec, build_bundle(TRAIN.format(steps=steps), notebook="train.ipynb"))


@pytest.fixture(autouse=True)
def _no_job_left_running(ddl_app):
    """Whatever a failing assertion skipped, no replica outlives the test."""
    yield
    for job in ddl_app.manager.list(backend="local"):
        if not job.state.finished:
            ddl_app.manager.cancel(job.name, "local")


async def _until(predicate, timeout=60.0):
    import asyncio

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = await predicate()
        if value:
            return value
        await asyncio.sleep(0.3)
    raise AssertionError("condition not reached in time")


async def test_running_job_list_detail_logs_cancel_delete(jp_fetch, ddl_app):
    _submit(ddl_app.manager, "rest-run", steps=3000)

    async def running_with_lines():
        page = await get_json(
            jp_fetch, "jupyter-ddl", "jobs", "rest-run", "logs", params={"replica": "master-0"}
        )
        return page if len(page["lines"]) >= 3 else None

    first = await _until(running_with_lines)
    # a session's first torch job may begin with the supervisor's note on its cold start
    user = [ln for ln in first["lines"] if not ln["text"].startswith("cold start: ")]
    assert user[0]["text"] == "step=0 loss=1.0000"
    step0 = user[0]["offset"]  # offsets count the note too

    listed = await get_json(jp_fetch, "jupyter-ddl", "jobs", params={"state": "Running"})
    row = next(j for j in listed["jobs"] if j["name"] == "rest-run")
    assert (row["backend"], row["strategy"], row["total"]) == ("local", "torch-ddp", 2)
    assert row["notebook"] == "train.ipynb" and row["elapsed"] > 0
    other_nb = await get_json(jp_fetch, "jupyter-ddl", "jobs", params={"notebook": "x.ipynb"})
    assert other_nb["jobs"] == []

    detail = await get_json(jp_fetch, "jupyter-ddl", "jobs", "rest-run")
    assert detail["state"] == "Running" and detail["spec"]["replicas"] == {"Master": 1, "Worker": 1}
    assert sorted(r["id"] for r in detail["replicas"]) == ["master-0", "worker-0"]
    assert "do-not-show-me" not in json.dumps(detail)

    # follow from where the page ended: new lines arrive while the job runs
    start = first["next_offsets"]["master-0"]
    seen: list[dict] = []
    buf = [""]

    def on_chunk(chunk: bytes) -> None:
        buf[0] += chunk.decode()
        *frames, buf[0] = buf[0].split("\n\n")
        for f in frames:
            if "event: log" in f:
                seen.append(json.loads(f.split("data: ", 1)[1]))
        if len(seen) >= 10:
            raise _Enough  # close the stream from our side

    with pytest.raises((_Enough, HTTPClientError)):
        await jp_fetch(
            "jupyter-ddl",
            "jobs",
            "rest-run",
            "logs",
            params={"follow": "1", "replica": "master-0", "offset": str(start)},
            streaming_callback=on_chunk,
            request_timeout=30,
        )
    assert [ln["offset"] for ln in seen[:10]] == list(range(start, start + 10))
    step = start + 9 - step0
    assert seen[9]["text"] == f"step={step} loss={1.0 / (step + 1):.4f}"

    r = await jp_fetch("jupyter-ddl", "jobs", "rest-run", "cancel", method="POST", body=b"")
    assert json.loads(r.body)["state"] == "Cancelled"
    detail = await get_json(jp_fetch, "jupyter-ddl", "jobs", "rest-run")
    assert detail["finished"] and all(r["state"] != "Running" for r in detail["replicas"])

    r = await jp_fetch("jupyter-ddl", "jobs", "rest-run", method="DELETE")
    assert r.code == 204
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("jupyter-ddl", "jobs", "rest-run")
    assert info.value.code == 404


async def test_finished_job_stream_ends_and_metrics(jp_fetch, ddl_app):
    _submit(ddl_app.manager, "rest-done", steps=12)
    chunks: list[bytes] = []
    await jp_fetch(
        "jupyter-ddl",
        "jobs",
        "rest-done",
        "logs",
        params={"follow": "1", "replica": "master-0"},
        streaming_callback=chunks.append,
        request_timeout=90,
    )
    text = b"".join(chunks).decode()
    ids = [ln for ln in text.splitlines() if ln.startswith("id: master-0:")]
    assert len(ids) >= 12 and ids[:2] == ["id: master-0:0", "id: master-0:1"]
    end = json.loads(text.rsplit("event: end\ndata: ", 1)[1].split("\n", 1)[0])
    assert end["state"] == "Succeeded"

    metrics = await get_json(jp_fetch, "jupyter-ddl", "jobs", "rest-done", "metrics")
    assert metrics["replica"] == "master-0"
    losses = {p["step"]: p["values"]["loss"] for p in metrics["points"]}
    assert [s for s in losses if s < 12] == list(range(12))
    assert losses[3] == pytest.approx(0.25)


class _Enough(Exception):
    pass
