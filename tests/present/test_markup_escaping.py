"""Every name and text a job supplies (metric names, sources, replica ids, job names,
log lines) reaches the cell, the record and ``%ddl attach`` as text, never as markup:
the HTML the product writes is parsed by an HTML parser and must hold only the
elements the product itself writes."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from jupyter_ddl.models import EventKind, JobEvent, LogLine
from jupyter_ddl.present.chart import svg_charts
from jupyter_ddl.present.record import record_bundle
from jupyter_ddl.present.state import DashboardState
from jupyter_ddl.present.text import live_bundle

HOSTILE = "<img src=x onerror=alert(1)>"
QUOTED = "x' onmouseover='alert(2)"
DOUBLE = 'y" onload="alert(3)'


class Tags(HTMLParser):
    """Every start tag and attribute name, as a browser's tokenizer sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [a for a, _ in attrs]

    handle_startendtag = handle_starttag


def parsed(html: str) -> Tags:
    p = Tags()
    p.feed(html)
    p.close()
    return p


def _hostile_state() -> DashboardState:
    st = DashboardState("j")
    for rid in ("worker-0", f"worker-{QUOTED}"):
        st.apply(JobEvent(EventKind.LOG, "j", replica=rid, log=LogLine(rid, 0, HOSTILE)))
        for step in range(3):
            for name in (HOSTILE, QUOTED, DOUBLE, "loss"):
                st.apply(
                    JobEvent(
                        EventKind.METRIC, "j", replica=rid, step=step,
                        metrics={name: 1.0 + step}, source="report",
                    )
                )  # fmt: skip
            st.apply(
                JobEvent(
                    EventKind.METRIC, "j", replica=rid, step=step, metrics={"acc": 0.5},
                    source=DOUBLE,
                )
            )  # fmt: skip
    return st


def _assert_inert(html: str) -> None:
    p = parsed(html)
    assert "img" not in p.tags, html
    assert not [a for a in p.attrs if a.startswith("on")], html
    assert "script" not in p.tags


def test_chart_svg_escapes_metric_source_and_replica():
    st = _hostile_state()
    svg = svg_charts(st.charts(), st.colors(), st.labels(), title=HOSTILE)
    assert svg and "&lt;img" in svg
    _assert_inert(svg)


@pytest.mark.parametrize("surface", ["live", "record"])
def test_dashboard_and_record_html_hold_no_foreign_element(surface):
    st = _hostile_state()
    bundle = live_bundle(st) if surface == "live" else record_bundle(st)
    _assert_inert(bundle["text/html"])
