"""Plain-text and HTML pieces of a DashboardState (pure): header, root cause, replica
table, log lines.

Used by the live widget view, the live view without widgets, the saved record
(``record.py``) and ``%ddl status``/``%ddl wait``, so every surface shows the same
columns. HTML uses inline styles with JupyterLab's theme variables and plain
fallbacks, and no scripts: exported or reopened notebooks (nbviewer, GitHub) show it.
"""

from __future__ import annotations

import re
import unicodedata
from html import escape
from typing import Any

from jupyter_ddl.core.failures import Diagnosis
from jupyter_ddl.i18n import N_, tr
from jupyter_ddl.present.chart import svg_charts
from jupyter_ddl.present.state import (
    DashboardState,
    format_elapsed,
    format_resources,
    format_start,
)

# Text colours at 4.5:1 or more: the lab extension's stylesheet sets each variable for
# the light and the dark theme (labextension/style/base.css); the fallback, for a
# record read elsewhere, is the light theme's.
_STATE_COLORS = {
    "Succeeded": "var(--jp-ddl-state-succeeded,#1b5e20)",
    "Failed": "var(--jp-ddl-state-failed,#b71c1c)",
    "Cancelled": "var(--jp-ddl-state-cancelled,#616161)",
    "Running": "var(--jp-ddl-state-running,#0d47a1)",
    "Restarting": "var(--jp-ddl-state-restarting,#bf360c)",
}
FG = "color:var(--jp-ui-font-color1,inherit)"
MUTED = "color:var(--jp-ui-font-color2,#616161)"
RED = "var(--jp-ddl-state-failed,#b71c1c)"


def swatch(color: str) -> str:
    """A replica's colour beside its name (the name stays in the text colour)."""
    return f"<span aria-hidden='true' style='color:{color}'>■</span> "


#: a job's or replica's state as a learner reads it (the data stays English)
_STATE_WORDS = {
    "Pending": N_("Pending"),
    "Starting": N_("Starting"),
    "Running": N_("Running"),
    "Restarting": N_("Restarting"),
    "Succeeded": N_("Succeeded"),
    "Failed": N_("Failed"),
    "Cancelled": N_("Cancelled"),
    "Terminated": N_("Terminated"),
    "Unknown": N_("Unknown"),
}


def state_word(state: str) -> str:
    """``Failed`` in the current language (a state it does not know, as it is)."""
    return tr(_STATE_WORDS[state]) if state in _STATE_WORDS else state


def width(text: str) -> int:
    """Columns ``text`` takes in a terminal: a wide (CJK) character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def pad(text: str, columns: int) -> str:
    """``text`` filled with spaces to ``columns`` terminal columns."""
    return text + " " * max(0, columns - width(text))


def restarts_text(st: DashboardState) -> str:
    """``restarts 2 of 3``: every replica's restarts against the one backoff limit."""
    if st.backoff_limit is None:
        return tr("restarts {n}", n=st.restarts) if st.restarts else ""
    return tr("restarts {n} of {limit} (backoff limit)", n=st.restarts, limit=st.backoff_limit)


def source_text(st: DashboardState) -> str:
    """``train.ipynb · cell 3f2a9c1d``: where the job came from, when known."""
    parts = [st.notebook.rsplit("/", 1)[-1] if st.notebook else "", ""]
    if st.cell_id:
        parts[1] = f"cell {st.cell_id[:8]}"
    return " · ".join(p for p in parts if p)


def image_text(st: DashboardState) -> str:
    """``image r.io/t/ddl-nb@sha256:… (already in the registry)``, when known."""
    if not st.image:
        return ""
    how = {True: tr("(pushed)"), False: tr("(already in the registry, nothing uploaded)"), None: ""}
    said = how[st.image_pushed]
    return tr("image {image}", image=st.image) + (f" {said}" if said else "")


def notes(st: DashboardState) -> list[str]:
    """What follows the header's fields: the message, submit warnings not already in
    it, the watch's error."""
    message = job_message(st)
    warned = [f"warning: {w}" for w in st.warnings if w not in (message or "")]
    return [t for t in (message, *warned, st.error) if t]


def job_message(st: DashboardState) -> str | None:
    """The job's message without the root-cause line it leads with (shown apart)."""
    msg = st.message
    # i18n: the backend's English line, found to be cut off
    if msg and " failed first: " in msg and diagnosis_of(st) is not None:
        rest = msg.rsplit(" — ", 1)
        return rest[1] if len(rest) == 2 else None
    return msg


def header_text(st: DashboardState, now: float | None = None) -> str:
    parts = [st.name, st.strategy or "?", st.backend or "?", state_word(st.state)]
    parts += [started_text(st, now), format_elapsed(st.elapsed(now))]
    parts += [restarts_text(st), source_text(st), image_text(st)]
    line = " · ".join(p for p in parts if p) + "".join(f" — {t}" for t in notes(st))
    if st.detached:
        line += " — " + tr("detached (`%ddl attach {name}` follows it again)", name=st.name)
    return line


def header_html(st: DashboardState, now: float | None = None) -> str:
    color = _STATE_COLORS.get(st.state, "inherit")
    extra = "".join(f" <span>— {escape(t)}</span>" for t in notes(st))
    if st.detached:
        said = escape(tr("detached (`%ddl attach {name}` follows it again)", name=st.name))
        extra += f" <span>— {_code(said)}</span>"
    more = "".join(
        f" · <span style='{MUTED}'>{escape(t)}</span>"
        for t in (restarts_text(st), source_text(st), image_text(st))
        if t
    )
    started = f"{escape(t)} · " if (t := started_text(st, now)) else ""
    return (
        f"<b>{escape(st.name)}</b> · {escape(st.strategy or '?')} · {escape(st.backend or '?')} · "
        f'<b class="ddl-state" data-state="{escape(st.state)}" style="color:{color}">'
        f"{escape(state_word(st.state))}</b> · {started}{format_elapsed(st.elapsed(now))}"
        f"{more}{extra}"
    )


def started_text(st: DashboardState, now: float | None = None) -> str:
    """``started 14:05 UTC``: when the job started (else when it was created)."""
    when = format_start(st.started or st.created, now)
    return tr("started {time}", time=when) if when else ""


def _code(text: str) -> str:
    """Escaped text with its `backticks` as <code> (a translated hint keeps its code)."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


# -- the root cause ------------------------------------------------------------------------
def diagnosis_of(st: DashboardState) -> Diagnosis | None:
    """The diagnosis worth showing: a failed job, or replicas that failed and restart."""
    found = st.diagnosis()
    return found if found.root is not None else None


def cause_line(found: Diagnosis) -> str:
    """``Diagnosis.line`` in the current language (the same text in English)."""
    if found.root is None:
        return ""
    root = found.root
    text = tr("{replica} failed first: {summary}", replica=root.label, summary=root.summary)
    if root.exception is None and root.tail:  # no exception: what it said last
        said = " | ".join(t.strip() for t in root.tail[-3:])
        text += " " + tr("(last lines: {lines})", lines=said)
    follow = [f"{c.label} ({c.symptom or c.summary})" for c in found.consequences]
    if follow:
        text += tr("; then {replicas}", replicas=", ".join(follow))
    return text


def localized_message(message: str | None, found: Diagnosis | None) -> str | None:
    """A failed job's message with its root-cause line (which the backend wrote in
    English) in the current language; the rest (the operator's reason) as it is."""
    if message and found is not None and found.root is not None:
        line = found.line
        if message.startswith(line):
            return cause_line(found) + message[len(line) :]
        # written while the replicas failed, the line may name fewer consequences than
        # the final diagnosis (a peer stopped by the job's end since): the final one
        head, sep, rest = message.partition(" — ")
        english = f"{found.root.label} failed first: "  # i18n: the backend's English, matched
        if sep and head.startswith(english):
            return cause_line(found) + sep + rest
    return message


def root_cause_text(found: Diagnosis | None) -> str:
    if found is None or found.root is None:
        return ""
    root = found.root
    out = [
        tr(
            "root cause: {replica} failed first: {summary}",
            replica=root.label,
            summary=root.summary,
        )
    ]
    out += [f"  {t}" for t in root.tail]
    out += [
        tr("then: {replica} — {symptom}", replica=c.label, symptom=c.symptom or c.summary)
        for c in found.consequences
    ]
    return "\n".join(out)


def root_cause_html(found: Diagnosis | None) -> str:
    if found is None or found.root is None:
        return ""
    root = found.root
    tail = "\n".join(escape(t) for t in root.tail)
    then = "".join(
        f"<li><b>{escape(c.label)}</b>: {escape(c.symptom or c.summary)}"
        + (f" <i>({escape(tr('a consequence'))})</i>" if c.symptom else "")
        + "</li>"
        for c in found.consequences
    )
    return (
        f"<div class='ddl-rootcause' data-replica='{escape(root.replica)}' "
        f"style='border-left:3px solid {RED};padding:2px 8px;margin:4px 0'>"
        f"<div><b style='color:{RED}'>{escape(tr('Root cause'))}</b>: "
        + escape(tr("{replica} failed first", replica="\0")).replace("\0", f"<b>{escape(root.label)}</b>")
        + f" — {escape(root.summary)}</div>"
        + (f"<pre style='font-size:12px;margin:2px 0;white-space:pre-wrap'>{tail}</pre>" if tail else "")
        + (f"<div style='{MUTED}'>{escape(tr('Then, as consequences:'))}</div><ul style='margin:0'>{then}</ul>" if then else "")
        + "</div>"
    )  # fmt: skip


# -- the replica table ----------------------------------------------------------------------
COLUMNS = [
    N_("replica"), N_("state"), N_("restarts"), N_("exit"), N_("latest metric"),
    N_("resources"), N_("message"),
]  # fmt: skip


def columns() -> list[str]:
    """The replica table's headings in the current language."""
    return [tr(c) for c in COLUMNS]


def rows(st: DashboardState) -> list[list[str]]:
    out = []
    for rid, v in st.replicas.items():
        exit_ = "" if v.exit_code is None else str(v.exit_code)
        if v.signal is not None:
            exit_ = tr("signal {n}", n=v.signal)
        out.append(
            [
                v.label, state_word(v.state), str(v.restarts), exit_, st.latest_metric(rid),
                format_resources(v.resources), v.message or "",
            ]
        )  # fmt: skip
    return out


def table_text(st: DashboardState) -> str:
    table = [columns(), *rows(st)]
    widths = [max(width(r[i]) for r in table) for i in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(pad(c, w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table
    )


def table_html(st: DashboardState) -> str:
    head = "".join(
        f"<th style='text-align:left;padding:1px 8px 1px 0'>{escape(c)}</th>" for c in columns()
    )
    body = []
    for (rid, v), row in zip(st.replicas.items(), rows(st), strict=True):
        cells = [f"<td style='padding-right:8px'>{swatch(v.color)}<b>{escape(row[0])}</b></td>"]
        cells += [f"<td style='padding-right:8px'>{escape(c)}</td>" for c in row[1:]]
        body.append(f"<tr data-replica='{escape(rid)}'>" + "".join(cells) + "</tr>")
    return (
        f"<table class='ddl-replicas' style='border-collapse:collapse;{FG}'>"
        f"<tr>{head}</tr>{''.join(body)}</table>"
    )


# -- log lines ------------------------------------------------------------------------------
def log_text(lines: list[tuple[str, str]]) -> str:
    return "\n".join(f"[{rid}] {text}" for rid, text in lines)


def log_html(
    lines: list[tuple[str, str]], colors: dict[str, str], prefix: bool = True, box: bool = True
) -> str:
    out = []
    for rid, text in lines:
        tag = (
            f"<span style='border-left:3px solid {colors.get(rid, '#7f7f7f')};padding-left:3px'>"
            f"[{escape(rid)}]</span> "
            if prefix
            else ""
        )
        out.append(tag + escape(text))
    pre = (
        "<pre style='font-size:12px;margin:0;flex:none;overflow:visible'>"
        + "\n".join(out)
        + "</pre>"
    )
    if not box:
        return pre
    # column-reverse keeps the box scrolled to the newest line as lines arrive
    return (
        "<div style='max-height:24em;overflow:auto;display:flex;flex-direction:column-reverse'>"
        + pre
        + "</div>"
    )


def replica_log_html(st: DashboardState, rid: str, limit: int | None = None) -> str:
    """One replica's kept lines; a cancel's teardown apart and labelled as such."""
    v = st.replicas[rid]
    numbered = v.numbered()[-limit:] if limit else v.numbered()
    own = [(rid, t) for n, t in numbered if v.teardown_from is None or n < v.teardown_from]
    after = [(rid, t) for n, t in numbered if v.teardown_from is not None and n >= v.teardown_from]
    html = log_html(own, st.colors(), prefix=False)
    if after:
        html += (
            f"<details class='ddl-teardown'><summary style='{MUTED}'>"
            + escape(
                tr(
                    "teardown after the cancel ({n} lines: peers losing each other while being stopped, not a failure)",
                    n=len(after),
                )
            )
            + "</summary><div style='opacity:0.6'>"
            + f"{log_html(after, st.colors(), prefix=False)}</div></details>"
        )
    return html


def replica_log_text(st: DashboardState, rid: str, limit: int | None = None) -> str:
    v = st.replicas[rid]
    numbered = v.numbered()[-limit:] if limit else v.numbered()
    out = []
    for n, text in numbered:
        torn = v.teardown_from is not None and n >= v.teardown_from
        out.append(f"[{rid}] {'(' + tr('teardown') + ') ' if torn else ''}{text}")
    return "\n".join(out)


def live_bundle(st: DashboardState, now: float | None = None) -> dict[str, Any]:
    """The live view without widgets: header, root cause, replica table, merged log
    tail, charts."""
    found = diagnosis_of(st)
    merged = list(st.merged)
    text = "\n".join(
        t
        for t in (header_text(st, now), root_cause_text(found), table_text(st), log_text(merged))
        if t
    )
    chart = svg_charts(st.charts(), st.colors(), st.labels())
    html = (
        f"<div>{header_html(st, now)}</div>{root_cause_html(found)}{table_html(st)}"
        f"{log_html(merged, st.colors())}{chart}"
    )
    return {"text/plain": text, "text/html": html}
