"""The local backend's note on a replica started without its warm interpreter
("cold start: …") stays in the log file but is not the first line of the dashboard,
the record or the lab's log view; the user's own lines and jupyter-ddl's notes about
the job (restarts, stops) are."""

from __future__ import annotations

from jupyter_ddl.core.stream import COLD_START, NOTE_STREAM, internal_note
from jupyter_ddl.models import EventKind, JobEvent, LogLine
from jupyter_ddl.present.state import DashboardState


def _log(st: DashboardState, n: int, text: str, stream: str) -> None:
    line = LogLine("master-0", n, text, stream=stream)
    st.apply(JobEvent(EventKind.LOG, "j", replica="master-0", log=line))


def test_the_cold_start_note_is_not_a_line_of_the_dashboard():
    st = DashboardState("j")
    _log(st, 0, f"{COLD_START}no warm interpreter was running", NOTE_STREAM)
    _log(st, 1, "step=0 loss=1.0", "stdout")
    _log(st, 2, "master-0 ended with exit code 1; restart 1", NOTE_STREAM)
    assert [t for _, t in st.replicas["master-0"].numbered()] == [
        "step=0 loss=1.0",
        "master-0 ended with exit code 1; restart 1",
    ]


def test_only_our_own_note_is_internal():
    assert internal_note(NOTE_STREAM, f"{COLD_START}x")
    assert not internal_note("stdout", f"{COLD_START}x")  # the user printed it
    assert not internal_note(NOTE_STREAM, "worker-0 stopped: the job is failed")
