"""The charts' SVG is an image with a name (what it plots), as screen readers and
axe-core's svg-img-alt rule ask; a hostile metric name stays text."""

from __future__ import annotations

import re

from jupyter_ddl.present.chart import svg_charts


def test_chart_svg_names_what_it_plots():
    charts = {
        ("loss", "report"): {"worker-0": [(0, 1.0), (1, 0.5)]},
        ("accuracy", "report"): {"worker-0": [(0, 0.1), (1, 0.7)]},
    }
    svg = svg_charts(charts, {"worker-0": "#1f77b4"}, title="mnist")
    head = svg.split(">", 1)[0]
    assert 'role="img"' in head
    label = re.search(r'aria-label="([^"]*)"', head)
    assert label, head
    assert label.group(1) == "mnist: metrics by step, one line per replica: loss, accuracy"


def test_chart_name_escapes_a_hostile_metric():
    svg = svg_charts({('a"><script>', "report"): {"w": [(0, 1.0), (1, 2.0)]}}, {"w": "#000"})
    head = svg.split("\n", 1)[0]
    assert "<script" not in head and "&quot;&gt;&lt;script&gt;" in head
