"""A diverged job (``report(loss=nan)``) travels as JSON every browser parses: its
non-finite values are ``null`` in ``/jobs``, ``/jobs/NAME``, ``/metrics`` and the SSE
frames, never a bare ``NaN``/``Infinity`` that ``JSON.parse`` refuses."""

from __future__ import annotations

import json
import math

import pytest

from jupyter_ddl._util import jsonsafe
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.models import JobSpec
from jupyter_ddl.server import answers
from jupyter_ddl.server import job_stream as events

pytestmark = pytest.mark.timeout(60)


def strict(text: str):
    """``JSON.parse``: NaN, Infinity and -Infinity are not JSON."""

    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def _frames(text):
    out = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            out.append((fields["event"], strict(fields["data"])))
    return out


def _diverged(manager, name):
    spec = JobSpec(name=name, strategy="torch-ddp", replicas={"Master": 1, "Worker": 1})
    fake = manager.backend("local")
    fake.submit(spec, build_bundle("x = 1"))
    fake.start(name)
    for step, value in enumerate([1.0, math.nan, math.inf, -math.inf, 0.5]):
        fake.metric(name, "master-0", step, loss=value)
    fake.jobs[name].status.metrics = {"loss": math.nan, "acc": math.inf}
    return fake


async def test_rest_answers_hold_no_bare_nan(jp_fetch, fake_manager):
    _diverged(fake_manager, "div")
    listing = strict((await jp_fetch("jupyter-ddl", "jobs")).body.decode())
    (row,) = [j for j in listing["jobs"] if j["name"] == "div"]
    detail = strict((await jp_fetch("jupyter-ddl", "jobs", "div")).body.decode())
    assert detail["metrics"] == {"loss": None, "acc": None}
    metrics = strict((await jp_fetch("jupyter-ddl", "jobs", "div", "metrics")).body.decode())
    values = [p["values"]["loss"] for p in metrics["points"]]
    assert values == [1.0, None, None, None, 0.5]  # the chart's gaps


def test_sse_frames_hold_no_bare_nan():
    status = _status_with_nan()
    row = answers.job_summary(status)
    rows = {("local", status.name): row}
    frames = _frames(events.snapshot_frame(rows) + "".join(events.diff_rows({}, rows)))
    assert [event for event, _ in frames] == ["jobs", "job"]
    assert frames[1][1]["name"] == "div"
    assert "NaN" not in jsonsafe.dumps({"v": [math.nan, {"w": (math.inf,)}]})


def _status_with_nan():
    from jupyter_ddl.models import JobState, JobStatus

    return JobStatus(
        name="div", backend="local", strategy="torch-ddp", state=JobState.RUNNING,
        metrics={"loss": math.nan},
    )  # fmt: skip
