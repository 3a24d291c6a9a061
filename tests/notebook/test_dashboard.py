"""The dashboard: bounded state, coalesced rendering, the record that replaces the live
view in the same output, widget view."""

from __future__ import annotations

import threading
import time
import xml.etree.ElementTree as ET

import pytest

from jupyter_ddl.models import EventKind, JobEvent, LogLine
from jupyter_ddl.present.chart import svg_charts
from jupyter_ddl.present.state import DashboardState
from jupyter_ddl.widgets.dashboard import Dashboard
from jupyter_ddl.widgets.follow import Follower
from tests.support import require
from tests.support.fake_backend import FakeBackend


class Recorder:
    """A display function that keeps every output and its updates, like a front end."""

    class Handle:
        def __init__(self, rec, i):
            self.rec, self.i = rec, i

        def update(self, obj, raw=False):
            self.rec.outputs[self.i] = obj
            self.rec.updates += 1

    def __init__(self):
        self.outputs: list = []
        self.updates = 0

    def __call__(self, obj, raw=False, display_id=None):
        self.outputs.append(obj)
        return self.Handle(self, len(self.outputs) - 1) if display_id else None


def _log(rid, n, text="x"):
    return JobEvent(EventKind.LOG, "j", replica=rid, log=LogLine(rid, n, text))


def test_state_keeps_bounded_buffers():
    st = DashboardState("j", tail=50, max_points=40)
    for n in range(1000):
        st.apply(_log("worker-0", n, f"line {n}"))
        st.apply(
            JobEvent(
                EventKind.METRIC, "j", replica="worker-0", metrics={"loss": 1 / (n + 1)}, step=n,
                source="report",
            )
        )  # fmt: skip
    v = st.replicas["worker-0"]
    assert len(v.lines) == 50 and v.lines[-1] == "line 999" and v.line_count == 1000
    assert len(st.merged) == 50
    pts = v.metrics[("loss", "report")]
    assert len(pts) <= 40 and pts[0][0] == 0 and pts[-1][0] == 999  # whole run, fewer points
    assert st.latest_metric("worker-0") == "loss=0.001"


def test_rendering_is_coalesced_to_the_refresh_rate():
    pushes: list[tuple[float, bool]] = []

    class CountingView:
        def snapshot(self, state, final):
            return len(state.merged)

        def push(self, snap, final):
            pushes.append((time.monotonic(), final))

    def flood(stop: threading.Event):
        end = time.monotonic() + 1.5
        n = 0
        while time.monotonic() < end:
            yield _log(f"worker-{n % 4}", n)
            n += 1
            if n % 200 == 0:
                time.sleep(0.001)

    st = DashboardState("j", tail=20)
    f = Follower(flood, st, CountingView(), refresh_hz=5).start()
    assert f.join(10)
    live = [t for t, final in pushes if not final]
    assert st.events > 1000 and len(st.merged) == 20
    assert 3 <= len(live) <= 1.5 * 5 + 2  # ≤ refresh_hz updates per second
    assert [final for _, final in pushes].count(True) == 1 and pushes[-1][1]


def test_refresh_rate_is_capped_at_ten_per_second():
    f = Follower(lambda s: iter(()), DashboardState("j"), None, refresh_hz=1000)  # type: ignore[arg-type]
    assert f.period == pytest.approx(0.1)


def test_text_view_final_output_has_state_replica_lines_and_an_svg_chart(manager, fake):
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.models import JobSpec

    manager.submit(JobSpec("t1", "torch-ddp", {"Master": 1, "Worker": 1}), build_bundle("x=1"))
    rec = Recorder()
    dash = Dashboard(manager, "t1", display=rec).start()
    fake.start("t1")
    for i in range(5):
        for rid in ("master-0", "worker-0"):
            fake.log("t1", rid, f"{rid} says <{i}>")
            fake.metric("t1", rid, i, loss=1.0 / (i + 1), accuracy=i / 5)
    fake.resource("t1", "master-0", cpu_percent=55.0, memory_rss=2.5 * 2**30)
    fake.finish("t1")
    assert dash.wait(5)
    assert len(rec.outputs) == 1 and rec.updates >= 1  # one output, the record replaced it
    record = rec.outputs[0]
    assert set(record) == {"text/html", "text/plain"}
    assert "Succeeded" in record["text/plain"]
    assert "[master-0] master-0 says <4>" in record["text/plain"]
    assert "worker-0 says &lt;4&gt;" in record["text/html"]  # escaped
    assert "55%" in record["text/plain"] and "2.5 GiB" in record["text/plain"]
    assert "%ddl attach t1" in record["text/plain"] and "<script" not in record["text/html"]
    html = record["text/html"]
    svg = ET.fromstring(html[html.index("<svg") : html.index("</svg>") + 6])
    panels = [e for e in svg.iter() if e.tag.endswith("}g") and e.get("data-metric")]
    assert sorted(e.get("data-metric") for e in panels) == ["accuracy", "loss"]
    lines = [e for e in svg.iter() if e.tag.endswith("polyline")]
    assert len(lines) == 4  # 2 metrics × 2 replicas


def test_widget_view_tabs_cancel_and_detach(manager, fake):
    require.module("ipywidgets")
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.models import JobSpec

    for name in ("w1", "w2"):
        manager.submit(JobSpec(name, "torch-ddp", {"Master": 1, "Worker": 2}), build_bundle("x=1"))
    rec = Recorder()
    dash = Dashboard(manager, "w1", widgets=True, display=rec).start()
    fake.start("w1")
    for rid in ("master-0", "worker-0", "worker-1"):
        fake.log("w1", rid, f"hello from {rid}")
    deadline = time.monotonic() + 5
    view = dash.view
    while len(view.tabs.children) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert view.tabs.titles == ("all", "master-0", "worker-0", "worker-1")
    assert "hello from worker-1" in view.replica_logs["worker-1"].value
    assert "[worker-0]" in view.merged.value  # merged view carries a prefix per replica
    live = rec.outputs[0]
    assert live["application/vnd.jupyter.widget-view+json"]["model_id"] == view.box.model_id
    # Cancel asks first; "Keep running" leaves the job alone
    view.cancel_button.click()
    assert view.confirm.layout.display == "flex" and view.cancel_button.layout.display == "none"
    view.keep_button.click()
    assert view.confirm.layout.display == "none" and view.cancel_button.layout.display is None
    assert not dash.wait(0.3) and fake.cancelled == []
    view.cancel_button.click()
    view.confirm_button.click()
    assert dash.wait(5) and fake.cancelled == ["w1"]
    assert view.cancel_button.disabled
    record = rec.outputs[0]  # the same output now holds the record, and no widget
    assert "application/vnd.jupyter.widget-view+json" not in record
    assert "Cancelled" in record["text/plain"] and "hello from worker-1" in record["text/html"]

    other_rec = Recorder()
    other = Dashboard(manager, "w2", widgets=True, display=other_rec).start()
    other.view.detach_button.click()
    assert other.wait(5) and "detached" in other_rec.outputs[0]["text/plain"]
    assert fake.jobs["w2"].status.state.value == "Pending"  # detaching leaves the job alone


def test_widget_view_says_disconnected_when_its_kernel_is_gone(manager, fake):
    """The front end marks the views of a dead kernel's widgets with the class
    jupyter-widgets-disconnected; the dashboard carries the rules that then show the
    note and make its buttons inert (checked in a real browser in tests/browser)."""
    require.module("ipywidgets")
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.models import JobSpec

    manager.submit(JobSpec("k1", "torch-ddp", {"Master": 1}), build_bundle("x=1"))
    dash = Dashboard(manager, "k1", widgets=True, display=Recorder()).start()
    view = dash.view
    assert "ddl-dashboard" in view.box._dom_classes
    assert "ddl-live-button" in view.cancel_button._dom_classes
    note = view.offline.value
    assert "disconnected" in note and "%ddl attach k1" in note
    assert ".jupyter-widgets-disconnected .ddl-offline" in note
    dash.detach()
    dash.wait(5)


def test_charts_are_valid_svg_and_escape_names():
    svg = svg_charts(
        {
            ("loss", "report"): {"a<b": [(0, 1.0), (1, float("nan")), (2, 0.5)], "w-1": [(0, 2.0)]},
        },
        {"a<b": "#123456", "w-1": "#654321"},
        {"a<b": "a<b · rank 0"},
        title="job & co",
    )
    root = ET.fromstring(svg)
    texts = [e.text for e in root.iter() if e.tag.endswith("text")]
    assert "job & co" in texts and "a<b · rank 0" in texts
    assert svg_charts({}, {}) == ""


def test_fake_backend_is_a_real_backend_subclass():
    from jupyter_ddl.backends.base import Backend

    assert issubclass(FakeBackend, Backend)


def test_build_progress_widget_follows_the_callback():
    require.module("ipywidgets")
    from jupyter_ddl.widgets.build_bar import BuildProgress

    rec = Recorder()
    p = BuildProgress(widgets=True, display=rec)
    p(0, 200_000_000)
    assert p.bar.value == 0.0 and len(rec.outputs) == 1
    p(200_000_000, 200_000_000)  # the last call always draws
    assert p.bar.value == 1.0 and p.bar.bar_style == "success" and "200.0/200.0 MB" in p.label.value
