"""The TensorFlow warm-path benchmark: its rows from given samples, and a run in its
short form end to end (that it runs and yields its rows, never how fast)."""

from __future__ import annotations

import pytest
from support import require

from benchmarks import runner, warm_tensorflow
from benchmarks.table import render_markdown


def test_rows_divide_warm_and_cold_by_the_processes_by_hand():
    rows = warm_tensorflow.rows([1.0, 1.2, 0.9], [5.0, 6.0, 5.5], [4.0, 4.4, 4.2])
    warm_row, cold_row = rows
    assert warm_row.measure.endswith("warm") and cold_row.measure.endswith("cold")
    assert warm_row.ours == 1.0 and warm_row.baseline == 4.2 and warm_row.passed is True
    assert cold_row.ours == 5.5 and cold_row.ratio == pytest.approx(5.5 / 4.2)
    assert cold_row.passed is False  # > 1.2× by hand
    assert runner.contract_problems(rows) == []
    assert warm_tensorflow.HAND in render_markdown(rows)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_benchmark_runs_in_its_short_form():
    require.module("tensorflow")
    rows = warm_tensorflow.run(quick=True)
    assert [r.measure.rsplit(", ", 1)[-1] for r in rows] == ["warm", "cold"]
    assert all(r.ours > 0 and r.baseline and r.baseline > 0 for r in rows)
