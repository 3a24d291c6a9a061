"""The real-tier benchmark's edges and its rows, without a tier (the run itself is
tests/cluster/test_bench_real.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.delay_proxy import delayed, proxied_kubeconfig
from benchmarks.k8s_real import KINDS, measure, rows


@pytest.mark.parametrize("repeats", [0, 21])
def test_repeats_out_of_range_are_refused(repeats):
    with pytest.raises(ValueError, match="outside 1-20"):
        measure(Path("/nonexistent"), repeats=repeats)


def test_a_delay_out_of_range_is_refused(tmp_path):
    with (
        pytest.raises(ValueError, match="outside 0-5 s"),
        delayed(tmp_path / "kc", tmp_path / "o", 9),
    ):
        pass


def test_the_proxied_kubeconfig_changes_only_the_port(tmp_path):
    src = tmp_path / "kc"
    src.write_text(
        "clusters:\n- name: t\n  cluster: {server: 'https://127.0.0.1:6443', "
        "certificate-authority: /ca.crt}\nusers:\n- name: u\n  user: {token: x}\n"
    )
    out = proxied_kubeconfig(src, tmp_path / "out", 4321).read_text()
    assert "https://127.0.0.1:4321" in out and "/ca.crt" in out and "6443" not in out
    assert (tmp_path / "out").stat().st_mode & 0o077 == 0


def test_rows_name_each_baseline_and_report_an_sdk_failure_as_an_error():
    kinds = list(KINDS)
    got = rows(
        0.5,
        {k: [0.2] for k in kinds},
        {k: [1.0] for k in kinds},
        {k: [0.4] for k in kinds},
        {"PyTorchJob": {"created": [0.1], "first_line": [3.0]}, "TFJob": {"error": "boom"}},
        {"TrainJob": "no Trainer"},
    )
    by = {(r.measure, r.baseline_name): r for r in got}
    created = by[("PyTorchJob: cell to job created", "kubectl create -f (dry-run YAML)")]
    assert created.ratio == pytest.approx(0.5) and created.passed is True
    line = by[("PyTorchJob: cell to first log line", "Training SDK v1 create_job, wait, logs")]
    assert line.ratio == pytest.approx(1 / 3)
    assert by[("TFJob: SDK", "Training SDK v1 create_job")].error == "boom"
    assert by[("TrainJob: not measured", "kubectl create -f (dry-run YAML)")].error == "no Trainer"
    assert not [r for r in got if r.measure.startswith("TrainJob") and not r.error]
    mpi = by[("MPIJob: cell to first log line", "no SDK creates an MPIJob v2beta1")]
    assert mpi.baseline is None and mpi.ours == 1.0
