"""One huge line (a 10 MB ``print``) is cut on every surface, with a marker that says
how much was cut and where the whole line is: the cell's live view, the saved record,
``%ddl logs --tail`` and the REST status message."""

from __future__ import annotations

from jupyter_ddl.models import EventKind, JobEvent, JobState, JobStatus, LogLine
from jupyter_ddl.present.clip import MAX_LINE, MAX_MESSAGE, clip
from jupyter_ddl.present.record import record_bundle
from jupyter_ddl.present.state import DashboardState
from jupyter_ddl.present.text import live_bundle
from jupyter_ddl.server.answers import job_summary

HUGE = "x" * 10_000_000


def test_clip_names_what_was_cut_and_where_the_whole_is():
    assert clip("short") == "short"
    out = clip("a" * 5000, 100, "see the log")
    assert out.startswith("a" * 100) and out.endswith("[4,900 more characters cut; see the log]")


def test_cell_and_record_carry_a_huge_line_cut():
    st = DashboardState("j")
    for n in range(3):
        st.apply(JobEvent(EventKind.LOG, "j", replica="worker-0", log=LogLine("worker-0", n, HUGE)))
    for bundle in (live_bundle(st), record_bundle(st)):
        for mime in ("text/html", "text/plain"):
            assert len(bundle[mime]) < 4 * 3 * MAX_LINE + 20_000, mime
            assert "9,996,000 more characters cut" in bundle[mime]
            assert "%ddl logs j --replica worker-0" in bundle[mime]


def test_rest_status_message_is_cut():
    status = JobStatus(
        name="j", backend="local", strategy="torch-ddp", state=JobState.FAILED, message=HUGE
    )
    row = job_summary(status)
    assert len(row["message"]) < MAX_MESSAGE + 200 and "more characters cut" in row["message"]
