"""The training-overhead benchmark's rows (``training_overhead``): steps/s beside the
same script by hand, and the most speed the product's own processes can have cost
(``helper_cpu``) beside the by-hand launcher's own wait. Pure functions of the runs'
figures."""

from __future__ import annotations

import statistics

from benchmarks.helper_cpu import KINDS, held_speed
from benchmarks.table import Row, summarize

__all__ = ["AREA", "TARGET_RATIO", "paired_ratio"]

AREA = "training overhead"
TARGET_RATIO = 0.97  # the supervisor (log pump, exits, status) must cost ≤ 3 %


def paired_ratio(ours: list[float], hand: list[float]) -> tuple[float, tuple[float, float]]:
    """Median and range of ours / by hand within each pair. The two runs of a pair are
    back to back, so a change of the machine's load between pairs, which moves both
    medians (±10 % here), cancels in it."""
    return summarize([o / h for o, h in zip(ours, hand, strict=True)])


def _row(measure: str, ours: list[float], hand: list[float]) -> Row:
    pair_med, (pair_low, pair_high) = paired_ratio(ours, hand)
    measure += f", per pair {pair_med:.3f}× ({pair_low:.3f}–{pair_high:.3f})"
    ours_med, ours_rng = summarize(ours)
    hand_med, hand_rng = summarize(hand)
    ratio = ours_med / hand_med if hand_med else 0.0
    return Row(
        area=AREA,
        measure=measure,
        ours=ours_med,
        baseline=hand_med,
        baseline_name="same script by hand",
        target=f"≥ {TARGET_RATIO}× by hand",
        passed=ratio >= TARGET_RATIO,
        unit="steps/s",
        ours_range=ours_rng,
        baseline_range=hand_rng,
    )


def _held_row(which: str, held: list[dict[str, float]], hand: list[dict[str, float]]) -> Row:
    """The most speed the helpers' CPU can have cost the job, in percent per run: 1 -
    ``helper_cpu.held_speed``, beside the same for the by-hand runs (the launching
    process's wait); it passes when the worst run of ours meets the target. The
    measure names each kind's median share."""

    def cost(runs: list[dict[str, float]]) -> list[float]:
        return [100 * (1 - held_speed(sum(h.values()), 1.0)) for h in runs]

    med, rng = summarize(cost(held))
    hand_med, hand_rng = summarize(cost(hand))
    parts = ", ".join(f"{k} {100 * statistics.median(h[k] for h in held):.2f} %" for k in KINDS)
    return Row(
        area=AREA,
        measure=f"most speed the product's own processes can have cost (their CPU seconds "
        f"/ training seconds; {parts}), {which}, {len(held)} runs",
        ours=med,
        baseline=hand_med,
        baseline_name="by hand: the launching process's wait",
        target=f"≤ {100 * (1 - TARGET_RATIO):.0f} %, every run",
        passed=rng[1] <= 100 * (1 - TARGET_RATIO),
        unit="%",
        ours_range=rng,
        baseline_range=hand_rng,
    )
