"""The record a job leaves in its cell (pure): what a saved notebook keeps of a job.

Static and widget-free (``text/html`` plus a ``text/plain`` fallback, no scripts), so it
renders in JupyterLab after a kernel restart, in nbviewer, on GitHub and in
``jupyter nbconvert --to html``: the final state, the root cause of a failure, the
replica table, the charts as inline SVG, the last lines of each replica (a cancel's
teardown apart) and the ``%ddl attach NAME`` line that reconnects to the job. The
dashboard writes it over its own live output when the job ends (one display id), so it
replaces the live view instead of following it.
"""

from __future__ import annotations

import re
from html import escape
from typing import Any

from jupyter_ddl.i18n import tr
from jupyter_ddl.present.chart import svg_charts
from jupyter_ddl.present.state import DashboardState
from jupyter_ddl.present.text import (
    MUTED,
    diagnosis_of,
    header_html,
    header_text,
    replica_log_html,
    replica_log_text,
    root_cause_html,
    root_cause_text,
    swatch,
    table_html,
    table_text,
)

#: lines of each replica a record keeps (never more than the dashboard's tail)
PER_REPLICA = 40


def attach_line(name: str) -> str:
    return tr(
        "`%ddl attach {name}` follows this job again; `%ddl logs {name}` shows every line",
        name=name,
    )


def lines_title(kept: int, total: int) -> str:
    """``1 line``, ``all 3 lines``, ``last 5 of 40 lines``: a replica log's size in words."""
    if total <= 1:
        return tr("1 line") if total == 1 else tr("no lines")
    if kept >= total:
        return tr("all {total} lines", total=total)
    return tr("last {kept} of {total} lines", kept=kept, total=total)


def _replica_order(st: DashboardState, root: str | None) -> list[str]:
    """The root cause's replica first, then the others in job order."""
    ids = [rid for rid, v in st.replicas.items() if v.lines]
    return sorted(ids, key=lambda rid: rid != root)


def record_bundle(st: DashboardState, per_replica: int = PER_REPLICA) -> dict[str, Any]:
    """The record of the job ``st`` followed, as a display bundle."""
    n = min(per_replica, st.tail)
    found = diagnosis_of(st)
    root = found.root.replica if found and found.root else None
    chart = svg_charts(st.charts(), st.colors(), st.labels())
    texts = [header_text(st), root_cause_text(found), table_text(st)]
    sections = []
    for rid in _replica_order(st, root):
        v = st.replicas[rid]
        kept = min(n, len(v.lines))
        count = lines_title(kept, v.line_count)
        texts.append(f"--- {v.label} ({count})\n{replica_log_text(st, rid, n)}")
        sections.append(
            f"<details open data-replica='{escape(rid)}'><summary>"
            f"{swatch(v.color)}<b>{escape(v.label)}</b> <span style='{MUTED}'>({escape(count)})</span>"
            f"</summary>{replica_log_html(st, rid, n)}</details>"
        )
    texts.append(attach_line(st.name))
    said = re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(attach_line(st.name)))
    attach = f"<div class='ddl-attach' style='{MUTED};margin-top:4px'>{said}</div>"
    html = (
        f"<div class='ddl-record' data-job='{escape(st.name)}' data-state='{escape(st.state)}'>"
        f"<div>{header_html(st)}</div>{root_cause_html(found)}{table_html(st)}{chart}"
        f"{''.join(sections)}{attach}</div>"
    )
    return {"text/html": html, "text/plain": "\n".join(t for t in texts if t)}
