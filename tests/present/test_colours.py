"""Colours of the cell's dashboard and record: a replica has one colour, by its place
in the job, the same as in the lab's job view, and never red (red says a failure);
text is at 4.5:1 or more on the light and the dark theme."""

from __future__ import annotations

import colorsys
import re
from pathlib import Path

from jupyter_ddl.core.states import JobState, JobStatus, ReplicaState, ReplicaStatus
from jupyter_ddl.models import EventKind, JobEvent, LogLine
from jupyter_ddl.present.record import record_bundle
from jupyter_ddl.present.state import PALETTE, DashboardState

CSS = Path(__file__).resolve().parents[2] / "labextension/style/base.css"
LIGHT, DARK = ("#ffffff", "#f5f5f5"), ("#111111", "#212121")  # backgrounds of each theme


def _luminance(hex_: str) -> float:
    r, g, b = (int(hex_[i : i + 2], 16) / 255 for i in (1, 3, 5))
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _status(state: ReplicaState) -> JobStatus:
    return JobStatus(
        name="j", backend="local", strategy="torch-ddp", state=JobState.SUCCEEDED,
        replicas=[ReplicaStatus("Master", 0, ReplicaState.SUCCEEDED, rank=0),
                  ReplicaStatus("Worker", 0, state, rank=1)],
    )  # fmt: skip


def test_a_replica_is_coloured_by_its_place_in_the_job_not_by_who_spoke_first():
    st = DashboardState("j")
    line = LogLine("worker-0", 0, "step=0 loss=1.0")
    st.apply(JobEvent(EventKind.LOG, "j", replica="worker-0", log=line))  # worker-0 first
    st.apply(JobEvent(EventKind.STATUS, "j", status=_status(ReplicaState.SUCCEEDED)))
    assert st.colors() == {"master-0": PALETTE[0], "worker-0": PALETTE[1]}


def test_the_lab_job_view_uses_the_same_colours_and_none_is_red():
    css = CSS.read_text(encoding="utf-8")
    lab = re.findall(r"\.jp-DDL-series-(\d+) \{\s*--jp-ddl-series: (#[0-9a-f]{6});", css)
    assert [c for _, c in sorted(lab, key=lambda x: int(x[0]))] == list(PALETTE)
    for c in PALETTE:
        hue, _, saturation = colorsys.rgb_to_hls(*(int(c[i : i + 2], 16) / 255 for i in (1, 3, 5)))
        assert not (saturation > 0.3 and (hue < 25 / 360 or hue > 335 / 360)), f"{c} reads as red"
        # a line or a swatch: 3:1 on every background
        assert min(contrast(c, bg) for bg in LIGHT + DARK) >= 3, c


def test_every_text_colour_of_a_record_reaches_4_5_to_1_in_both_themes():
    html = record_bundle(DashboardState.of_status(_status(ReplicaState.FAILED)))["text/html"]
    css = CSS.read_text(encoding="utf-8")
    dark_block = css[css.index("body[data-jp-theme-light='false'] {") :]
    dark_block = dark_block[: dark_block.index("}")]
    light = dict(re.findall(r"(--jp-ddl-state-\w+): (#[0-9a-f]{6})", css[: css.index(dark_block)]))
    dark = dict(re.findall(r"(--jp-ddl-state-\w+): (#[0-9a-f]{6})", dark_block))
    assert light.keys() == dark.keys() and len(light) == 5
    texts = re.findall(r"(?<![\w-])color:([^;'\"]+)", html)
    swatches = set(re.findall(r"aria-hidden='true' style='color:([^']+)'", html))
    checked = 0
    for value in texts:
        if value in swatches or value == "inherit" or "--jp-ui-font-color" in value:
            continue  # a swatch (not text), or JupyterLab's own text colours
        m = re.fullmatch(r"var\((--[\w-]+),(#[0-9a-f]{6})\)", value.strip())
        assert m, f"a fixed text colour: {value}"
        name, fallback = m.groups()
        assert fallback == light[name]
        assert min(contrast(light[name], bg) for bg in LIGHT) >= 4.5, value
        assert min(contrast(dark[name], bg) for bg in DARK) >= 4.5, value
        checked += 1
    assert checked >= 2  # the state word and the root cause heading
