"""The warm-availability sequence and the Kubernetes submit benchmarks: their settings,
their rows from given samples, and each run end to end in its short form (that it
runs and yields its rows, never how fast)."""

from __future__ import annotations

import math
import tempfile

import psutil
import pytest
from support import require

from benchmarks import k8s_submit, runner, warm_sequence
from benchmarks.table import render_markdown


def test_sequence_settings_default_quick_and_from_the_environment():
    assert warm_sequence.settings(False, {}) == (10, (5.0, 30.0), 60.0)
    assert warm_sequence.settings(True, {})[:2] == (3, (0.2, 0.5))
    env = {"DDL_BENCH_SEQ_JOBS": "4", "DDL_BENCH_SEQ_GAPS": "1,2"}
    assert warm_sequence.settings(False, env)[:2] == (4, (1.0, 2.0))
    for bad in ({"DDL_BENCH_SEQ_JOBS": "1"}, {"DDL_BENCH_SEQ_JOBS": "x"},
                {"DDL_BENCH_SEQ_GAPS": "5"}, {"DDL_BENCH_SEQ_GAPS": "9,2"}):  # fmt: skip
        with pytest.raises(ValueError, match="DDL_BENCH_SEQ_"):
            warm_sequence.settings(False, bad)


def test_sequence_rows_count_warm_jobs_after_the_first_and_compare_median_and_p90():
    ours = [1.5, 0.1, 0.12, 0.9, 0.11, 0.1, 0.13, 0.1, 0.12, 0.1]
    colds = ["cold start: no warm interpreter was running", None, None, "cold start: x",
             None, None, None, None, None, None]  # fmt: skip
    fork = [0.05] * 10
    hand = [1.2] * 10
    rows = warm_sequence.rows(ours, colds, fork, hand)
    by = {(r.measure, r.baseline_name): r for r in rows}
    frac = by[
        ("fraction of jobs after the first that started warm", "accelerate's fork (never imports)")
    ]
    assert frac.ours == pytest.approx(8 / 9) and frac.passed is False  # < 0.9
    med = by[(f"{warm_sequence.SEEN}, median", warm_sequence.ACCELERATE)]
    assert med.ours == pytest.approx(0.115) and med.baseline == 0.05 and med.passed is True
    p90 = by[(f"{warm_sequence.SEEN}, p90", warm_sequence.HAND)]
    assert p90.ours == 0.9 and p90.passed is False
    assert runner.contract_problems(rows) == []


def test_sequence_rows_say_when_accelerate_could_not_run():
    rows = warm_sequence.rows(
        [1.0, 0.1], [None, None], [], [1.0, 1.1], "no module named accelerate"
    )
    (err,) = [r for r in rows if r.error]
    assert "accelerate" in err.error and "accelerate" in render_markdown(rows)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_sequence_runs_in_its_short_form(tmp_path, monkeypatch):
    require.module("torch")
    require.module("ipykernel")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where its throw-away dir goes
    rows = warm_sequence.run(quick=True)
    assert [r.measure for r in rows][0] == "fraction of jobs after the first that started warm"
    assert len(rows) == 5
    assert all(math.isfinite(r.ours) for r in rows if not r.error)
    assert 0 <= rows[0].ours <= 1
    # its jobs ended with it: the training job (still running at the short form's last
    # launch), its supervisors and its spare; nothing made its data dir again
    left = [p.info for p in psutil.process_iter(["pid", "cmdline"])
            if str(tmp_path) in " ".join(p.info["cmdline"] or [])]  # fmt: skip
    assert not left
    assert not list(tmp_path.glob("ddl-bench-seq-*"))


def test_submit_rows_put_each_kind_beside_kubectl():
    ours = {k: [0.2, 0.3, 0.25] for k in k8s_submit.KINDS}
    kubectl = {k: [0.5, 0.6] for k in k8s_submit.KINDS}
    rows = k8s_submit.rows(ours, kubectl, [0.9], None, {k: [0.8] for k in k8s_submit.KINDS})
    main = [r for r in rows if "after the first" in r.measure]
    assert [r.measure.split(":")[0] for r in main] == list(k8s_submit.KINDS)
    assert all(r.passed and r.ratio == pytest.approx(0.25 / 0.55) for r in main)
    missing = k8s_submit.rows(ours, {}, [], "kubectl is not on PATH")
    assert all(r.error == "kubectl is not on PATH" for r in missing)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_submit_benchmark_runs_in_its_short_form():
    require.module("kubernetes")
    rows = k8s_submit.run(quick=True)
    assert {r.measure.split(":")[0] for r in rows} >= set(k8s_submit.KINDS)
    assert all(r.error == "kubectl is not on PATH" or math.isfinite(r.ours) for r in rows)


def test_gaps_shrink_in_proportion_to_fit_the_budget():
    assert warm_sequence.fit(10, (5.0, 30.0), None) == (5.0, 30.0)
    low, high = warm_sequence.fit(10, (5.0, 30.0), 190)
    assert high / low == pytest.approx(6) and 9 * (low + high) / 2 == pytest.approx(
        warm_sequence.GAP_SHARE * 190
    )
    assert warm_sequence.fit(3, (0.2, 0.5), 190) == (0.2, 0.5)
