"""A static metrics chart as SVG text (no plotting library needed).

One panel per metric (loss first), one line per replica in the replica's colour, with
min/max labels on both axes and a legend. The SVG is plain text, so it is saved in the
notebook and shown by any exported HTML.
"""

from __future__ import annotations

import math
from html import escape

Series = list[tuple[float, float]]

_PANEL_W, _PANEL_H = 300, 180
_PAD_L, _PAD_R, _PAD_T, _PAD_B = 52, 12, 22, 28
_PREFERRED = ("loss", "val_loss", "accuracy", "acc", "val_accuracy")


def metric_order(series: dict[str, dict[str, Series]], limit: int = 4) -> list[str]:
    """The metrics to draw: well-known ones first, then alphabetical, at most ``limit``."""
    names = {m for per in series.values() for m in per}
    first = [m for m in _PREFERRED if m in names]
    rest = sorted(names - set(first))
    return (first + rest)[:limit]


def svg_chart(series: dict[str, dict[str, Series]], colors: dict[str, str], title: str = "") -> str:
    """The chart for ``series`` (replica → metric → [(step, value)]); an empty string
    when there is nothing to draw."""
    metrics = metric_order(series)
    if not metrics:
        return ""
    width = _PANEL_W * len(metrics)
    legend_h = 18
    height = _PANEL_H + legend_h + (18 if title else 0)
    top = 18 if title else 0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    if title:
        parts.append(f'<text x="6" y="13" font-weight="bold">{escape(title)}</text>')
    for i, metric in enumerate(metrics):
        lines = {rid: per[metric] for rid, per in series.items() if per.get(metric)}
        parts.append(_panel(metric, lines, colors, i * _PANEL_W, top))
    parts.append(_legend(list(series), colors, top + _PANEL_H + 12))
    parts.append("</svg>")
    return "\n".join(parts)


def _finite(points: Series) -> Series:
    return [(x, y) for x, y in points if math.isfinite(x) and math.isfinite(y)]


def _panel(metric: str, lines: dict[str, Series], colors: dict[str, str], x0: int, y0: int) -> str:
    pts = [p for s in lines.values() for p in _finite(s)]
    out = [f'<g transform="translate({x0},{y0})">']
    out.append(f'<text x="{_PAD_L}" y="14" font-weight="bold">{escape(metric)}</text>')
    plot_w = _PANEL_W - _PAD_L - _PAD_R
    plot_h = _PANEL_H - _PAD_T - _PAD_B
    out.append(
        f'<rect x="{_PAD_L}" y="{_PAD_T}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#bbb"/>'
    )
    if pts:
        xmin, xmax = min(p[0] for p in pts), max(p[0] for p in pts)
        ymin, ymax = min(p[1] for p in pts), max(p[1] for p in pts)
        xspan, yspan = (xmax - xmin) or 1.0, (ymax - ymin) or 1.0

        def sx(x: float) -> float:
            return _PAD_L + (x - xmin) / xspan * plot_w

        def sy(y: float) -> float:
            return _PAD_T + plot_h - (y - ymin) / yspan * plot_h

        for rid, s in lines.items():
            coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in _finite(s))
            color = escape(colors.get(rid, "#333"))
            out.append(
                f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{coords}">'
                f"<title>{escape(rid)}</title></polyline>"
            )
        bottom = _PAD_T + plot_h
        out.append(f'<text x="{_PAD_L - 4}" y="{_PAD_T + 8}" text-anchor="end">{ymax:.3g}</text>')
        out.append(f'<text x="{_PAD_L - 4}" y="{bottom}" text-anchor="end">{ymin:.3g}</text>')
        out.append(f'<text x="{_PAD_L}" y="{bottom + 14}">{xmin:g}</text>')
        out.append(
            f'<text x="{_PAD_L + plot_w}" y="{bottom + 14}" text-anchor="end">{xmax:g} step</text>'
        )
    out.append("</g>")
    return "\n".join(out)


def _legend(replicas: list[str], colors: dict[str, str], y: int) -> str:
    out = []
    x = _PAD_L
    for rid in replicas:
        color = escape(colors.get(rid, "#333"))
        out.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{x + 14}" y="{y}">{escape(rid)}</text>')
        x += 24 + 7 * len(rid)
    return "\n".join(out)
