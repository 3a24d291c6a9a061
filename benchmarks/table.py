"""One row format for every benchmark, printed as one table and written as markdown."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass


@dataclass
class Row:
    area: str  # "image, nothing changed"
    measure: str  # "requests"
    ours: float  # median of repeats
    baseline: float | None  # median of the baseline, measured in the same run
    baseline_name: str  # "skopeo copy of the base"
    target: str  # "≤ 3", "≥ 0.95× baseline"
    passed: bool | None
    unit: str = ""
    ours_range: tuple[float, float] | None = None  # min, max
    baseline_range: tuple[float, float] | None = None
    error: str | None = None  # set by the runner when the module failed: one line
    # A measure whose code is not built yet, kept as a slot with its target and its
    # baseline measured in the run: what is missing, in a few words.
    pending: str | None = None

    @property
    def ratio(self) -> float | None:
        if self.baseline in (None, 0):
            return None
        return self.ours / self.baseline  # type: ignore[operator]


def summarize(samples: list[float]) -> tuple[float, tuple[float, float]]:
    """Median and (min, max) of repeated measurements."""
    return statistics.median(samples), (min(samples), max(samples))


COLUMNS = ("area", "measure", "ours (median, min–max)", "baseline", "ratio", "target", "result")


def fmt_number(value: float) -> str:
    """Short human form: 3 significant figures (whole numbers from 100), k/M/G from 10,000."""
    if math.isnan(value):
        return "–"
    for threshold, scale, suffix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if abs(value) >= threshold:
            return f"{value / scale:.3g}{suffix}"
    if value == int(value) or abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}" if abs(value) >= 1 else f"{value:.2g}"


def fmt_bytes(value: float) -> str:
    """``62.9 MB``: SI prefixes, as skopeo and registries print sizes."""
    for scale, suffix in ((1e9, "GB"), (1e6, "MB"), (1e4, "kB")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {suffix}"
    return f"{fmt_number(value)} B"


def fmt_figure(value: float | None, rng: tuple[float, float] | None, unit: str) -> str:
    """``151 steps/s (148–155)``; the range only when it differs from the median."""
    if value is None:
        return "–"
    num = fmt_bytes if unit == "B" else fmt_number
    text = num(value) + (f" {unit}" if unit and unit != "B" else "")
    low, high = (num(rng[0]), num(rng[1])) if rng else (None, None)
    if low is not None and (low, high) != (num(value), num(value)):
        text += f" ({low}–{high})"
    return text


def result_word(row: Row) -> str:
    if row.error:
        return "ERROR"
    if row.pending:
        return "pending"
    return {True: "pass", False: "FAIL", None: "n/a"}[row.passed]


def cells(row: Row) -> list[str]:
    """The row as the table's column texts."""
    if row.error:
        return [row.area, row.measure, "–", row.baseline_name or "–", "–", row.target, "ERROR"]
    figure = fmt_figure(row.baseline, row.baseline_range, row.unit)
    baseline = f"{row.baseline_name}: {figure}" if row.baseline_name else figure
    ratio = None if row.pending else row.ratio
    return [
        row.area,
        row.measure,
        f"– ({row.pending})" if row.pending else fmt_figure(row.ours, row.ours_range, row.unit),
        baseline,
        "–" if ratio is None else f"{fmt_number(ratio)}×",
        row.target,
        result_word(row),
    ]


def render_text(rows: list[Row]) -> str:
    """A plain aligned table for the terminal, with the failure reasons under it."""
    body = [list(COLUMNS)] + [cells(r) for r in rows]
    widths = [max(len(line[i]) for line in body) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in body
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines += [f"! {r.area}: {r.error}" for r in rows if r.error]
    return "\n".join(lines)


def render_markdown(rows: list[Row]) -> str:
    """The same table as GitHub markdown, failure reasons as a list below it."""
    esc = [[c.replace("|", "\\|") for c in cells(r)] for r in rows]
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(c) + " |" for c in esc]
    errors = [f"- **{r.area}**: {r.error}" for r in rows if r.error]
    if errors:
        lines += ["", "Errors:", ""] + errors
    return "\n".join(lines)
