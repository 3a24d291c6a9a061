"""The job-list push channel (GET /jupyter-ddl/events), the strategy catalog
(GET /jupyter-ddl/strategies) and the metric source the sidebar's charts read."""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.core.strategies import CATALOG
from jupyter_ddl.models import JobSpec, LogLine
from jupyter_ddl.server import answers as views
from jupyter_ddl.server import job_stream as events
from tests.support.fake_backend import steps

from .conftest import get_json

pytestmark = pytest.mark.timeout(60)


def _row(name, state="Running", elapsed=1.0, backend="local", created=1.0):
    return {
        "name": name,
        "backend": backend,
        "state": state,
        "elapsed": elapsed,
        "created": created,
    }


def _frames(text):
    """(event, data) of every SSE frame in ``text`` (comments left out)."""
    out = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            out.append((fields["event"], json.loads(fields["data"])))
    return out


def test_diff_sends_new_changed_and_removed_rows_only():
    old = {("local", "a"): _row("a"), ("local", "b"): _row("b")}
    new = {
        ("local", "a"): _row("a", elapsed=9.0),  # only older: no frame
        ("local", "b"): _row("b", state="Succeeded"),
        ("kubernetes", "a"): _row("a", backend="kubernetes"),  # same name, other backend
    }
    got = _frames("".join(events.diff_rows(old, new)))
    assert got == [("job", _row("b", state="Succeeded")), ("job", _row("a", backend="kubernetes"))]
    gone = _frames("".join(events.diff_rows(new, {})))
    assert sorted((e, d["backend"], d["name"]) for e, d in gone) == [
        ("removed", "kubernetes", "a"),
        ("removed", "local", "a"),
        ("removed", "local", "b"),
    ]


def test_snapshot_is_newest_first_like_the_job_list():
    rows = {("local", n): _row(n, created=c) for n, c in (("old", 1.0), ("new", 5.0))}
    [(event, data)] = _frames(events.snapshot_frame(rows))
    assert event == "jobs" and [r["name"] for r in data["jobs"]] == ["new", "old"]


def test_a_slow_list_is_looked_at_less_often():
    assert events.pause_after([0.01, 0.02, 0.01]) == events.WATCH_S
    # slow every time: listing takes a quarter of the time at most
    assert events.pause_after([1.0, 1.2, 1.1]) == pytest.approx(3.0)
    # the first look (it loads the backends) or one busy moment does not slow it down
    assert events.pause_after([2.5]) == events.WATCH_S
    assert events.pause_after([0.01, 2.5, 0.02]) == events.WATCH_S
    assert events.pause_after(deque([1.0, 1.2, 1.1], maxlen=3)) == pytest.approx(3.0)


def _submit(manager, name, notebook="a.ipynb"):
    spec = JobSpec(
        name=name, strategy="torch-ddp", replicas={"Master": 1, "Worker": 1}, notebook=notebook
    )
    manager.backend("local").submit(spec, build_bundle(steps(1000)))


class _Stream:
    """An open GET /events whose frames a test reads while it acts on jobs; a plain
    socket, so the test can hang up the way a closed browser tab does."""

    def __init__(self, port, headers, base_url):
        self.request = "".join(
            [f"GET {base_url}jupyter-ddl/events HTTP/1.0\r\nHost: 127.0.0.1\r\n"]
            + [f"{k}: {v}\r\n" for k, v in headers.items()]
            + ["\r\n"]
        ).encode()
        self.port = port
        self.data = b""

    async def __aenter__(self):
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writer.write(self.request)
        self.task = asyncio.ensure_future(self._read())
        return self

    async def _read(self):
        while chunk := await self.reader.read(65536):
            self.data += chunk

    async def __aexit__(self, *exc):
        self.writer.close()
        self.task.cancel()

    def frames(self):
        head, _, body = self.data.partition(b"\r\n\r\n")
        assert not head or head.startswith(b"HTTP/1.1 200"), head
        return _frames(body.decode())

    async def until(self, predicate, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for event, data in self.frames():
                if predicate(event, data):
                    return data
            await asyncio.sleep(0.05)
        raise AssertionError(f"no such event in time; got {self.frames()}")


@pytest.fixture
def open_stream(jp_fetch, http_server_port, jp_auth_header, jp_base_url):
    return lambda: _Stream(http_server_port[1], jp_auth_header, jp_base_url)


async def test_stream_pushes_new_changed_and_removed_jobs(open_stream, fake_manager, ddl_app):
    _submit(fake_manager, "before")
    async with open_stream() as stream:
        first = await stream.until(lambda e, d: e == "jobs")
        assert [r["name"] for r in first["jobs"]] == ["before"]
        assert first["jobs"][0] == {
            **views.job_summary(fake_manager.get("before")),
            "elapsed": first["jobs"][0]["elapsed"],
        }
        t0 = time.monotonic()
        _submit(fake_manager, "pushed")
        row = await stream.until(lambda e, d: e == "job" and d["name"] == "pushed")
        seen_new = time.monotonic() - t0
        assert row["state"] == "Running" and row["notebook"] == "a.ipynb"

        t0 = time.monotonic()
        fake_manager.cancel("pushed")
        await stream.until(lambda e, d: e == "job" and d["state"] == "Cancelled")
        seen_end = time.monotonic() - t0
        fake_manager.delete("before")
        gone = await stream.until(lambda e, d: e == "removed")
        assert gone == {"backend": "local", "name": "before"}
        # generous bounds (a shared machine); the watch looks every WATCH_S
        assert seen_new < 3 and seen_end < 3, (seen_new, seen_end)
        watch = events.job_list_watch(ddl_app.serverapp.web_app.settings)
        assert watch.listeners == 1
    deadline = time.monotonic() + 5
    while (watch.listeners or watch.running) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert watch.listeners == 0 and not watch.running  # nobody listens: nothing polls


async def test_two_clients_share_one_watch(open_stream, fake_manager, ddl_app):
    _submit(fake_manager, "one-list")
    async with open_stream() as one, open_stream() as two:
        for stream in (one, two):
            listed = await stream.until(lambda e, d: e == "jobs")
            assert [r["name"] for r in listed["jobs"]] == ["one-list"]
        watch = events.job_list_watch(ddl_app.serverapp.web_app.settings)
        assert watch.listeners == 2


async def test_strategy_catalog(jp_fetch, fake_manager):
    got = await get_json(jp_fetch, "jupyter-ddl", "strategies")
    by_name = {s["name"]: s for s in got["strategies"]}
    assert list(by_name) == list(CATALOG)
    assert by_name["torch-ddp"]["replicas"] == {"default": 2, "min": 1, "max": None}
    assert by_name["tf-mirrored"]["replicas"] == {"default": 1, "min": 1, "max": 1}
    assert by_name["tf-parameter-server"]["framework"] == "tensorflow"
    assert [f["name"] for f in got["frameworks"]] == ["tensorflow", "pytorch", "mpi"]
    hints = got["import_hints"]
    assert all(h["strategy"] in CATALOG for h in hints)
    modules = [h["module"] for h in hints]
    # a torch import is the weakest hint: DeepSpeed and Ignite notebooks import torch too
    assert modules.index("deepspeed") < modules.index("torch") > modules.index("ignite")


def test_metric_points_say_where_each_value_came_from():
    lines = [
        LogLine("worker-0", 0, '@@ddl-metric@@ {"step": 1, "loss": 0.5}'),
        LogLine("worker-0", 1, "50/50 [====] - 1s 3ms/step - loss: 0.4 - accuracy: 0.9"),
        LogLine("worker-0", 2, "step=3 loss=0.3"),
    ]
    points = views.metric_points(lines)
    assert [(p["source"], p["values"]["loss"]) for p in points] == [
        ("report", 0.5),
        ("keras", 0.4),
        ("log", 0.3),
    ]
