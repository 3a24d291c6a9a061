"""Start times beside durations in the cell's dashboard and record: the kernel's local
time with its zone named, the date too when it was not today."""

from __future__ import annotations

import time

from jupyter_ddl.core.states import JobState, JobStatus
from jupyter_ddl.present.state import DashboardState, format_start
from jupyter_ddl.present.text import header_html, header_text

NOW = time.mktime((2026, 11, 27, 15, 30, 0, 0, 0, -1))
STARTED = NOW - 18


def _state() -> DashboardState:
    status = JobStatus(name="j", backend="local", strategy="torch-ddp", state=JobState.RUNNING,
                       created=STARTED - 2, started=STARTED)  # fmt: skip
    return DashboardState.of_status(status)


def test_the_header_says_when_the_job_started_beside_how_long_it_ran():
    zone = time.strftime("%Z", time.localtime(STARTED))
    assert f" · started 15:29 {zone} · 0:18" in header_text(_state(), NOW)
    assert f"started 15:29 {zone} · 0:18" in header_html(_state(), NOW)


def test_a_start_on_another_day_names_the_day():
    zone = time.strftime("%Z", time.localtime(STARTED))
    assert format_start(STARTED - 86400, NOW) == f"26 Nov 15:29 {zone}"
    assert format_start(STARTED, NOW) == f"15:29 {zone}"
    assert format_start(None, NOW) == ""
