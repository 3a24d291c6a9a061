"""The job API gives the lines a person reads: report() lines stay in the raw log (the
metrics are read from there) but never reach Backend.logs, the watch's LOG events or
JobManager.logs; a tail counts user lines; METRIC events carry their source."""

from __future__ import annotations

import threading

import pytest

from jupyter_ddl.backends.local import LocalBackend
from jupyter_ddl.config import Config
from jupyter_ddl.core.metrics import METRIC_MARKER
from jupyter_ddl.models import EventKind
from tests.local.conftest import submit, wait

pytestmark = pytest.mark.slow

CELL = """
for step in range(8):
    report(step=step, loss=1.0 / (step + 1))
    print(f"user line {step}", flush=True)
for step in range(4):
    report(step=8 + step, loss=0.1)  # the log ends with metrics only
"""


def test_logs_watch_and_tail_leave_report_lines_out(data_dir):
    from jupyter_ddl.manager import JobManager

    # cold: a warm start's first job begins with its "cold start: ..." line (test_warm.py)
    backend = LocalBackend(Config(local_warm_seconds=0))
    name = submit(backend, CELL, "torch-ddp", {"Master": 1, "Worker": 0}, dist_backend="gloo")
    assert wait(backend, name).state.value == "Succeeded"

    raw = [ln for ln in backend.logs(name, replica="master-0", raw=True)]
    user = [ln for ln in backend.logs(name, replica="master-0")]
    assert sum(METRIC_MARKER in ln.text for ln in raw) == 12  # the file keeps them
    assert [ln.text for ln in user] == [f"user line {i}" for i in range(8)]
    assert [ln.offset for ln in user] == [2 * i + 1 for i in range(8)]  # offsets of the file

    tail = [ln.text for ln in backend.logs(name, replica="master-0", tail=5)]
    assert tail == [f"user line {i}" for i in range(3, 8)]  # five user lines, no markers
    assert [ln.text for ln in backend.logs(name, replica="master-0", tail=5, raw=True)] == [
        ln.text for ln in raw[-5:]
    ]

    events = list(backend.watch(name, stop=threading.Event()))
    logs = [e.log.text for e in events if e.kind == EventKind.LOG]
    metrics = [e for e in events if e.kind == EventKind.METRIC]
    assert not any(METRIC_MARKER in t for t in logs) and "user line 7" in logs
    assert len(metrics) == 12 and {e.source for e in metrics} == {"report"}
    assert [e.step for e in metrics][:3] == [0, 1, 2]

    manager = JobManager()
    assert not any(METRIC_MARKER in ln.text for ln in manager.logs(name, backend="local"))
    reports = manager.reports(name, backend="local")  # still read from the raw log
    assert len(reports) == 12 and reports[0] == ("master-0", {"loss": 1.0})
