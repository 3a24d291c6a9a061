"""Plain-text and HTML renderings of a DashboardState (pure).

Used three ways: the live view where widgets are unavailable, the pieces the widget
view shows, and the final static output that stays in a saved notebook.
"""

from __future__ import annotations

from html import escape
from typing import Any

from .chart import svg_chart
from .state import DashboardState, format_elapsed, format_resource, resource_label

_STATE_COLORS = {
    "Succeeded": "#2ca02c",
    "Failed": "#d62728",
    "Cancelled": "#7f7f7f",
    "Running": "#1f77b4",
    "Restarting": "#ff7f0e",
}


def header_text(st: DashboardState, now: float | None = None) -> str:
    parts = [
        st.name,
        st.strategy or "?",
        st.backend or "?",
        st.state,
        format_elapsed(st.elapsed(now)),
    ]
    line = " · ".join(parts)
    if st.message:
        line += f" — {st.message}"
    if st.error:
        line += f" — {st.error}"
    if st.detached:
        line += f" — detached (`%ddl attach {st.name}` follows it again)"
    return line


def header_html(st: DashboardState, now: float | None = None) -> str:
    color = _STATE_COLORS.get(st.state, "#333")
    extra = "".join(f" <span>— {escape(t)}</span>" for t in (st.message, st.error) if t)
    if st.detached:
        extra += f" <span>— detached (<code>%ddl attach {escape(st.name)}</code> follows it again)</span>"
    return (
        f"<b>{escape(st.name)}</b> · {escape(st.strategy or '?')} · {escape(st.backend or '?')} · "
        f'<b style="color:{color}">{escape(st.state)}</b> · {format_elapsed(st.elapsed(now))}{extra}'
    )


def _rows(st: DashboardState) -> list[list[str]]:
    rows = []
    for rid, v in st.replicas.items():
        res = ", ".join(format_resource(k, x) for k, x in sorted(v.resources.items()))
        rows.append(
            [
                rid,
                v.state,
                str(v.restarts),
                "" if v.exit_code is None else str(v.exit_code),
                st.latest_metric(rid),
                res,
                v.message or "",
            ]
        )
    return rows


_COLUMNS = ["replica", "state", "restarts", "exit", "latest metric", "resources", "message"]


def table_text(st: DashboardState) -> str:
    rows = [_COLUMNS, *_rows(st)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def table_html(st: DashboardState) -> str:
    head = "".join(f"<th style='text-align:left'>{c}</th>" for c in _COLUMNS)
    body = []
    colors = st.colors()
    for row in _rows(st):
        cells = [f"<td style='color:{colors[row[0]]}'><b>{escape(row[0])}</b></td>"]
        cells += [f"<td>{escape(c)}</td>" for c in row[1:]]
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table class='ddl-replicas'><tr>{head}</tr>{''.join(body)}</table>"


def log_text(lines: list[tuple[str, str]]) -> str:
    return "\n".join(f"[{rid}] {text}" for rid, text in lines)


def log_html(lines: list[tuple[str, str]], colors: dict[str, str], prefix: bool = True) -> str:
    out = []
    for rid, text in lines:
        tag = (
            f"<span style='color:{colors.get(rid, '#333')}'>[{escape(rid)}]</span> "
            if prefix
            else ""
        )
        out.append(tag + escape(text))
    # column-reverse keeps the box scrolled to the newest line as lines arrive
    return (
        "<div style='max-height:24em;overflow:auto;display:flex;flex-direction:column-reverse'>"
        "<pre style='font-size:12px;margin:0;flex:none;overflow:visible'>"
        + "\n".join(out)
        + "</pre></div>"
    )


def resources_html(st: DashboardState) -> str:
    cells = []
    for rid, v in st.replicas.items():
        if v.resources:
            figs = ", ".join(
                f"{resource_label(k)} {format_resource(k, x)}"
                for k, x in sorted(v.resources.items())
            )
            cells.append(f"<b>{escape(rid)}</b>: {escape(figs)}")
    return "<br>".join(cells)


def live_bundle(st: DashboardState, now: float | None = None) -> dict[str, Any]:
    """The live view without widgets: header, replica table, merged log tail, chart."""
    merged = list(st.merged)
    text = "\n".join([header_text(st, now), table_text(st), log_text(merged)])
    chart = svg_chart(st.series(), st.colors())
    html = (
        f"<div>{header_html(st, now)}</div>{table_html(st)}{log_html(merged, st.colors())}{chart}"
    )
    return {"text/plain": text, "text/html": html}


def final_bundle(st: DashboardState, per_replica: int = 40) -> dict[str, Any]:
    """What stays in the saved notebook: final state, replica table and the last lines
    of each replica (at most ``per_replica``, never more than the tail)."""
    n = min(per_replica, st.tail)
    sections_t, sections_h = [], []
    colors = st.colors()
    for rid, v in st.replicas.items():
        last = [(rid, t) for t in list(v.lines)[-n:]]
        if not last:
            continue
        sections_t.append(f"--- {rid} (last {len(last)} of {v.line_count} lines)\n{log_text(last)}")
        sections_h.append(
            f"<details open><summary style='color:{colors[rid]}'><b>{escape(rid)}</b> "
            f"(last {len(last)} of {v.line_count} lines)</summary>{log_html(last, colors, prefix=False)}</details>"
        )
    text = "\n".join([header_text(st), table_text(st), *sections_t])
    html = f"<div>{header_html(st)}</div>{table_html(st)}{''.join(sections_h)}"
    return {"text/plain": text, "text/html": html}
