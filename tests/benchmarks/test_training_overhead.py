"""The training-overhead benchmark: real 2-rank DDP over gloo, by hand and through the
product's local backend. Few steps: this checks the measurement, not the figure."""

from __future__ import annotations

import math
import time

import pytest
from support import require

from benchmarks import overhead_rows as orows
from benchmarks import training_overhead as to


def test_parse_takes_the_slowest_rank_and_needs_every_rank():
    lines = [
        "2026-11-21T23:00:00 step 0 loss 2.3",
        f"2026-11-21T23:00:01 {to.MARKER} rank=1 140.500",
        f"{to.MARKER} rank=0 150.250",
    ]
    assert to.parse_steps_per_s(lines) == 140.5
    with pytest.raises(RuntimeError, match=r"ranks \[1\] printed no"):
        to.parse_steps_per_s(lines[2:])


def test_the_timed_span_is_where_every_rank_trained():
    lines = [
        f"{to.MARKER} rank=0 150.250 1000.000 1010.500",
        f"x {to.MARKER} rank=1 140.500 1000.250 1010.000",
    ]
    assert to.parse_steps_per_s(lines) == 140.5
    assert to.parse_window(lines) == (1000.25, 1010.0)
    with pytest.raises(RuntimeError, match="gave its timed span"):
        to.parse_window([f"{to.MARKER} rank=0 150.250"])
    with pytest.raises(RuntimeError, match="do not overlap"):
        to.parse_window([f"{to.MARKER} rank=0 1 5.0 6.0", f"{to.MARKER} rank=1 1 7.0 8.0"])


def test_the_cost_row_passes_only_when_every_run_does():
    def shares(supervisor: float, spares: float, notebook: float) -> dict[str, float]:
        return {"supervisor": supervisor, "spares": spares, "notebook": notebook}

    runs = [shares(0.001, 0, 0), shares(0.003, 0.001, 0.001), shares(0.01, 0.005, 0.005)]
    hand = [shares(0, 0, 0.001), shares(0, 0, 0.003)]
    row = orows._held_row("warm, 9 steps", runs, hand)
    assert row.measure.endswith("warm, 9 steps, 3 runs") and row.unit == "%"
    assert "supervisor 0.30 %, spares 0.10 %, notebook 0.10 %" in row.measure
    assert row.ours == pytest.approx(0.5) and row.ours_range == pytest.approx((0.1, 2.0))
    assert row.baseline == pytest.approx(0.2) and row.baseline_range == pytest.approx((0.1, 0.3))
    assert row.passed
    assert not orows._held_row("warm", [shares(0.001, 0, 0), shares(0.02, 0.01, 0.01)], hand).passed


def test_cell_is_valid_python_with_the_counts_filled_in():
    src = to.cell_source(steps=7, warmup=3)
    compile(src, "cell.py", "exec")
    assert "range(7)" in src and "range(3)" in src and "{" not in src.split("print(f")[0]


def test_the_per_pair_ratio_is_the_median_of_each_pairs_own_ratio():
    # pairs at 0.7, 1.05 and 1.13: their median, beside the medians' ratio (70 / 84)
    ours, hand = [70.0, 63.0, 95.0], [100.0, 60.0, 84.0]
    pair, (low, high) = orows.paired_ratio(ours, hand)
    assert (pair, low, high) == (63.0 / 60.0, 0.7, 95.0 / 84.0)
    row = orows._row("steps/s, x, 3 runs", ours, hand)
    assert row.measure == "steps/s, x, 3 runs, per pair 1.050× (0.700–1.131)"
    assert row.ratio == 70.0 / 84.0
    with pytest.raises(ValueError):
        orows.paired_ratio([1.0], [])


@pytest.mark.slow
def test_by_hand_two_ranks_train_and_report(tmp_path):
    require.module("torch")
    rate = to.run_by_hand(tmp_path, to.cell_source(steps=40, warmup=5), timeout=90)
    assert math.isfinite(rate) and rate > 1


@pytest.mark.slow
def test_by_hand_failure_names_the_rank_and_stops_its_peer(tmp_path):
    require.module("torch")
    # Rank 1 dies after the rendezvous; rank 0 would wait in the barrier for minutes.
    bad = (
        "import os, sys, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "if dist.get_rank() == 1:\n"
        "    print('rank 1 gives up', flush=True); sys.exit(4)\n"
        "dist.barrier()\n"
    )
    t = time.monotonic()
    with pytest.raises(RuntimeError, match=r"by-hand rank 1 exited 4: rank 1 gives up"):
        to.run_by_hand(tmp_path, bad, timeout=90)
    assert time.monotonic() - t < 60


@pytest.mark.slow
def test_one_row_with_both_figures_through_the_local_backend(data_dir):
    require.module("torch")
    require.module("jupyter_ddl.core.bundle")
    from jupyter_ddl.backends import backend_class

    backend_class("local")  # the local backend must load: no skip once it is in the tree
    # A budget smaller than one pair: each row still measures one pair, then stops.
    warm_row, first_row, warm_cost, first_cost = to.run(repeats=3, quick=True, steps=40, budget_s=1)
    assert "40 steps, 1 runs, per pair " in warm_row.measure
    assert (
        f"started beside it, {to.QUICK_IMPORT_STEPS} steps, 1 runs, per pair " in first_row.measure
    )
    for row in (warm_row, first_row):
        assert row.area == "training overhead" and row.unit == "steps/s"
        assert row.ours > 1 and row.baseline is not None and row.baseline > 1
        assert row.ratio is not None and row.passed == (row.ratio >= orows.TARGET_RATIO)
        assert row.ours_range == (row.ours, row.ours)
    # the helpers' CPU, read over each product run's timed steps: a real, small cost
    for row, which in ((warm_cost, "warm, 40 steps"), (first_cost, "first job")):
        assert which in row.measure and "1 runs" in row.measure and row.unit == "%"
        assert 0 <= row.ours < 100 and row.baseline is not None and 0 <= row.baseline < 100
        assert row.baseline_name == "by hand: the launching process's wait"
        assert "supervisor " in row.measure and "notebook " in row.measure
        assert row.passed == (row.ours <= 100 * (1 - orows.TARGET_RATIO))


@pytest.mark.slow
def test_the_first_job_row_starts_each_product_job_cold_beside_a_new_spare(data_dir):
    """What makes the second row what it says: before each product job no spare is
    left (so it starts cold), and each such job started a spare of its own."""
    require.module("torch")
    from jupyter_ddl.backends.local import warm
    from jupyter_ddl.manager import JobManager

    spares = warm.warm_dir(data_dir)
    found: list[list[str]] = []  # the spare records each product job found stopped

    def before() -> None:
        found.append(sorted(p.stem for p in spares.glob("*.json")))
        warm.stop_spares(spares)
        assert not list(spares.glob("*.json")) and not list(spares.glob("*.sock"))

    manager = JobManager()
    try:
        ours, hand = to._pairs(manager, data_dir, to.cell_source(20, 2), 2, None, before, "t")
        found.append(sorted(p.stem for p in spares.glob("*.json")))
    finally:
        manager.close()
        warm.stop_spares(spares)
    assert len(ours) == len(hand) == 2 and min(ours + hand) > 1
    first, second, after = found
    assert first == [] and len(second) == len(after) == 1 and second != after
