"""One row format for every benchmark, printed as one table and written as markdown."""

from __future__ import annotations

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

    @property
    def ratio(self) -> float | None:
        if self.baseline in (None, 0):
            return None
        return self.ours / self.baseline  # type: ignore[operator]


def summarize(samples: list[float]) -> tuple[float, tuple[float, float]]:
    """Median and (min, max) of repeated measurements."""
    return statistics.median(samples), (min(samples), max(samples))
