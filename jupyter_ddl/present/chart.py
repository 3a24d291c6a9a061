"""Metric charts as SVG text (no plotting library, no script), for the cell's dashboard
and the saved record.

The same rules as the sidebar's charts (labextension/src/pure/series.ts), so both agree:
one chart per metric name and source (a ``report()`` loss and a Keras progress loss
are different charts: together they double-count and saw-tooth), one line per replica
with a legend, a log axis when the values are positive and span three decades or more,
a restart (a step going back) or a nan starts a new segment instead of a line back to
step 0, and hover values (SVG ``<title>``). Colours are JupyterLab's theme variables
with fallbacks, so the dark theme works and nbviewer/GitHub still draw it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape

from jupyter_ddl.i18n import tr

Point = tuple[float, float]  # (step, value)
#: (metric, source) -> replica id -> points in the order they arrived
Charts = Mapping[tuple[str, str], Mapping[str, Sequence[Point]]]

SOURCES = ("report", "keras", "log")
_PREFERRED = ("loss", "val_loss", "accuracy", "acc", "val_accuracy")
MAX_CHARTS = 6
PER_ROW = 2
_W, _H = 440, 250  # one chart
_L, _R, _T, _B = 60, 14, 26, 52  # plot margins (legend below the x axis)
_HOVER_POINTS = 40  # markers with a hover value per line

TEXT = 'fill="#444" style="fill:var(--jp-ui-font-color1,#444)"'
MUTED = 'fill="#777" style="fill:var(--jp-ui-font-color2,#777)"'
GRID = 'stroke="#ddd" style="stroke:var(--jp-border-color2,#ddd)"'
FRAME = 'stroke="#bbb" style="stroke:var(--jp-border-color1,#bbb)"'


@dataclass(frozen=True)
class Axis:
    lo: float
    hi: float
    ticks: list[float]
    log: bool


def segments(points: Sequence[Point]) -> list[list[Point]]:
    """The points cut where a step goes back (a restarted attempt) or a value is not
    finite (a gap); empty segments dropped."""
    out: list[list[Point]] = [[]]
    for step, value in points:
        seg = out[-1]
        if not math.isfinite(value):
            if seg:
                out.append([])
            continue
        if seg and step < seg[-1][0]:
            out.append([(step, value)])
        else:
            seg.append((step, value))
    return [s for s in out if s]


def prefers_log(values: Sequence[float]) -> bool:
    """Log scale when the values are positive (zeros allowed) and span 3 decades."""
    positive = [v for v in values if v > 0]
    if not positive or any(v < 0 for v in values):
        return False
    return math.log10(max(positive) / min(positive)) >= 3


def _nice(raw: float) -> float:
    power: float = 10 ** math.floor(math.log10(raw))  # int ** int is typed Any
    f = raw / power
    return (1 if f < 1.5 else 2 if f < 3.5 else 5 if f < 7.5 else 10) * power


def linear_axis(lo: float, hi: float, count: int = 5, integer: bool = False) -> Axis:
    if lo == hi:
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    step = _nice((hi - lo) / count)
    if integer:
        step = max(1.0, round(step))
    first, last = math.floor(lo / step) * step, math.ceil(hi / step) * step
    ticks, t = [], first
    while t <= last + step / 2:
        ticks.append(float(f"{t:.12g}"))
        t += step
    return Axis(first, last, ticks, False)


def log_axis(values: Sequence[float], count: int = 6) -> Axis:
    positive = [v for v in values if v > 0]
    lo = math.floor(math.log10(min(positive)))
    hi = math.ceil(math.log10(max(positive)))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    every = max(1, math.ceil((hi - lo) / count))
    return Axis(10.0**lo, 10.0**hi, [10.0**e for e in range(lo, hi + 1, every)], True)


def y_axis(values: Sequence[float], log: bool) -> Axis:
    if log and any(v > 0 for v in values):
        return log_axis(values)
    return linear_axis(min(values, default=0.0), max(values, default=1.0))


def position(axis: Axis, value: float) -> float:
    """Where ``value`` sits on the axis, 0 to 1 (nan when it cannot be drawn)."""
    if axis.log:
        if value <= 0:
            return math.nan
        return (math.log10(value) - math.log10(axis.lo)) / (
            math.log10(axis.hi) - math.log10(axis.lo)
        )
    return (value - axis.lo) / (axis.hi - axis.lo)


def tick_label(value: float, log: bool) -> str:
    if log:
        e = round(math.log10(value))
        return f"1e{e}" if abs(e) >= 3 else f"{10.0**e:g}"
    a = abs(value)
    if a and (a < 1e-3 or a >= 1e5):
        return f"{value:.1e}"
    return f"{value:.6g}"


def chart_order(charts: Charts, limit: int = MAX_CHARTS) -> list[tuple[str, str]]:
    """Which charts to draw: by source (report, keras, log), well-known metrics first."""

    def key(k: tuple[str, str]) -> tuple[int, int, str]:
        metric, source = k
        pref = _PREFERRED.index(metric) if metric in _PREFERRED else len(_PREFERRED)
        return (SOURCES.index(source) if source in SOURCES else len(SOURCES), pref, metric)

    return sorted((k for k, per in charts.items() if any(per.values())), key=key)[:limit]


def svg_charts(
    charts: Charts,
    colors: Mapping[str, str],
    labels: Mapping[str, str] | None = None,
    title: str = "",
) -> str:
    """Every chart of ``charts`` in one SVG (a grid, ``PER_ROW`` wide); "" when empty.
    ``labels`` names replicas in legends and hover values (``worker-0 · rank 1``)."""
    keys = chart_order(charts)
    if not keys:
        return ""
    labels = labels or {}
    cols = min(PER_ROW, len(keys))
    rows = math.ceil(len(keys) / cols)
    top = 20 if title else 0
    width, height = cols * _W, rows * _H + top
    # an image needs a name for screen readers: what it plots (keys are bounded above)
    named = ", ".join(metric for metric, _ in keys)
    said = tr("metrics by step, one line per replica: {named}", named=named)
    label = escape(f"{title + ': ' if title else ''}{said}")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="ddl-chart" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" '
        f'font-size="11" role="img" aria-label="{label}">'
    ]
    if title:
        parts.append(f'<text x="6" y="14" font-weight="bold" {TEXT}>{escape(title)}</text>')
    for i, key in enumerate(keys):
        x0, y0 = (i % cols) * _W, top + (i // cols) * _H
        parts.append(_chart(key, charts[key], colors, labels, x0, y0))
    parts.append("</svg>")
    return "\n".join(parts)


def _chart(
    key: tuple[str, str],
    lines: Mapping[str, Sequence[Point]],
    colors: Mapping[str, str],
    labels: Mapping[str, str],
    x0: int,
    y0: int,
) -> str:
    metric, source = key
    segs = {rid: segments(points) for rid, points in lines.items()}
    segs = {rid: s for rid, s in segs.items() if s}
    values = [v for s in segs.values() for seg in s for _, v in seg]
    steps = [x for s in segs.values() for seg in s for x, _ in seg]
    log = prefers_log(values)
    ya = y_axis(values, log)
    xa = linear_axis(min(steps, default=0.0), max(steps, default=1.0), 5, integer=True)
    pw, ph = _W - _L - _R, _H - _T - _B
    name = f"{metric} ({source})" + (" · " + tr("log scale") if log else "")
    out = [f'<g class="ddl-chart-panel" data-metric="{escape(metric)}" data-source="{escape(source)}" '
           f'data-log="{str(log).lower()}" transform="translate({x0},{y0})">']  # fmt: skip
    out.append(f'<text x="{_L}" y="16" font-weight="bold" {TEXT}>{escape(name)}</text>')

    def sx(x: float) -> float:
        return _L + position(xa, x) * pw

    def sy(y: float) -> float:
        return _T + ph - position(ya, y) * ph

    for t in ya.ticks:
        y = sy(t)
        out.append(f'<line x1="{_L}" x2="{_L + pw}" y1="{y:.1f}" y2="{y:.1f}" {GRID}/>')
        out.append(
            f'<text x="{_L - 5}" y="{y + 4:.1f}" text-anchor="end" {MUTED}>'
            f"{tick_label(t, ya.log)}</text>"
        )
    for t in xa.ticks:
        x = sx(t)
        out.append(
            f'<text x="{x:.1f}" y="{_T + ph + 14}" text-anchor="middle" {MUTED}>'
            f"{tick_label(t, False)}</text>"
        )
    out.append(
        f'<text x="{_L + pw}" y="{_T + ph + 27}" text-anchor="end" {MUTED}>step</text>'
        f'<rect x="{_L}" y="{_T}" width="{pw}" height="{ph}" fill="none" {FRAME}/>'
    )
    for rid, s in segs.items():
        color = escape(colors.get(rid, "#1f77b4"))
        who = escape(labels.get(rid, rid))
        for n, seg in enumerate(s):
            faint = ' stroke-opacity="0.45"' if n < len(s) - 1 else ""  # earlier attempts
            pts = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in seg if _drawable(ya, y))
            out.append(
                f'<polyline fill="none" stroke="{color}" stroke-width="1.6"{faint} '
                f'points="{pts}"><title>{who}</title></polyline>'
            )
        out.append(_hover_points(s, sx, sy, ya, color, who, metric))
    out.append(_legend(list(segs), colors, labels, _T + ph + 42))
    out.append("</g>")
    return "\n".join(out)


def _drawable(axis: Axis, y: float) -> bool:
    return not (axis.log and y <= 0)


def _hover_points(
    segs: list[list[Point]],
    sx: Callable[[float], float],
    sy: Callable[[float], float],
    ya: Axis,
    color: str,
    who: str,
    metric: str,
) -> str:
    """Small markers whose SVG title is the value: hovering shows it."""
    pts = [p for seg in segs for p in seg if _drawable(ya, p[1])]
    every = max(1, math.ceil(len(pts) / _HOVER_POINTS))
    keep = pts[::every] + ([pts[-1]] if pts and (len(pts) - 1) % every else [])
    return "".join(
        f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{color}">'
        f"<title>{who} · step {x:g}: {escape(metric)} = {y:.6g}</title></circle>"
        for x, y in keep
    )


def _legend(
    replicas: list[str], colors: Mapping[str, str], labels: Mapping[str, str], y: int
) -> str:
    out, x = [], _L
    for rid in replicas:
        label = labels.get(rid, rid)
        color = escape(colors.get(rid, "#1f77b4"))
        out.append(
            f'<g class="ddl-legend-item"><rect x="{x}" y="{y - 9}" width="10" height="10" '
            f'fill="{color}"/><text x="{x + 14}" y="{y}" {TEXT}>{escape(label)}</text></g>'
        )
        x += 26 + 6 * len(label)
    return "".join(out)
