"""On Kubernetes (the API double) the job API leaves report() lines out of the log
lines too, counts a tail in user lines, and gives them as METRIC events with their
source."""

from __future__ import annotations

import threading
import uuid

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.core.metrics import METRIC_MARKER
from jupyter_ddl.manifests import CODE_DIR
from jupyter_ddl.models import EventKind, JobSpec, JobState

CELL = f"""\
import json
for step in range(6):
    print({METRIC_MARKER!r} + " " + json.dumps({{"step": step, "loss": 1.0 / (step + 1)}}), flush=True)
    print(f"user line {{step}}", flush=True)
print({METRIC_MARKER!r} + ' {{"step": 6, "loss": 0.1}}', flush=True)
"""


def test_logs_and_watch_without_report_lines(backend):
    spec = JobSpec(
        name=f"ul-{uuid.uuid4().hex[:6]}", strategy="torch-ddp", replicas={"Master": 1, "Worker": 0},
        command=["python", "-u", f"{CODE_DIR}/cell.py"],
    )  # fmt: skip
    backend.submit(spec, build_bundle(CELL))
    stop = threading.Event()
    timer = threading.Timer(40, stop.set)
    timer.start()
    try:
        events = list(backend.watch(spec.name, stop=stop))
    finally:
        timer.cancel()
    assert events[-1].status is not None and events[-1].status.state == JobState.SUCCEEDED
    logs = [e.log for e in events if e.kind == EventKind.LOG]
    assert [ln.text for ln in logs] == [f"user line {i}" for i in range(6)]
    assert [ln.offset for ln in logs] == [1, 3, 5, 7, 9, 11]  # offsets of the whole log
    metrics = [e for e in events if e.kind == EventKind.METRIC]
    assert [e.step for e in metrics] == list(range(7)) and {e.source for e in metrics} == {"report"}

    user = [ln.text for ln in backend.logs(spec.name, replica="master-0")]
    assert user == [f"user line {i}" for i in range(6)]
    assert [ln.text for ln in backend.logs(spec.name, replica="master-0", tail=2)] == [
        "user line 4", "user line 5",
    ]  # fmt: skip
    raw = [ln.text for ln in backend.logs(spec.name, replica="master-0", raw=True)]
    assert len(raw) == 13 and raw[-1].startswith(METRIC_MARKER)
