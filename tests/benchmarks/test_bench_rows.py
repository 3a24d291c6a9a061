"""Row shapes of the launch-peer, cost-curve and follower benchmarks, built from given
samples (the measuring code runs in ``scripts/bench``; here: what the table gets),
plus the Trainer SDK peer's guard against a CUDA build of torch."""

from __future__ import annotations

import math

import pytest

from benchmarks import k8s_scale, local_launch, local_scale, runner, trainer_sdk
from benchmarks.table import Row, render_markdown, render_text


def launch_samples() -> dict[str, list[float]]:
    return {
        "visible": [1.4, 1.3, 1.5],
        "ready": [1.2, 1.1, 1.25],
        "warm": [0.2, 0.22, 0.3],
        "warm_ready": [0.1, 0.12, 0.11],
        "accelerate": [0.03, 0.04, 0.05],
        "ipyparallel": [7.9, 8.1, 7.8],
        "trainer": [20.7],
        "torchrun": [1.9, 1.85, 2.0],
        "hand": [1.0, 1.1, 1.15],
    }


def test_launch_rows_put_ours_cold_beside_every_peer_and_warm_beside_the_fork():
    rows = local_launch.rows(launch_samples(), {})
    cold = f"{local_launch.COLD}: "
    visible = [r for r in rows if r.measure == cold + local_launch.VISIBLE]
    assert [r.baseline_name for r in visible] == list(local_launch.PEERS.values())
    assert all(r.ours == 1.4 and r.unit == "s" and r.ours_range == (1.3, 1.5) for r in visible)
    by_name = {r.baseline_name: r for r in visible}
    hand = by_name[local_launch.PEERS["hand"]]
    assert hand.target == "≤ 1.2× baseline" and hand.passed is False  # 1.4 > 1.2 × 1.1
    torchrun = by_name[local_launch.PEERS["torchrun"]]
    assert torchrun.passed is True and "today 0.75×" in torchrun.target  # 1.4 ≤ 0.8 × 1.9
    assert by_name[local_launch.PEERS["trainer"]].passed is None  # context, no target
    (ready,) = [r for r in rows if r.measure == cold + local_launch.READY_MEASURE]
    assert ready.ours == 1.2 and ready.baseline == 1.1 and ready.passed is True
    warm = f"{local_launch.WARM}: "
    (fork,) = [r for r in rows if r.measure == warm + local_launch.VISIBLE]
    assert (fork.ours, fork.baseline, fork.ours_range) == (0.22, 0.04, (0.2, 0.3))
    assert fork.target == "≤ 0.25 s and ≤ 10× baseline" and fork.passed is True
    (warm_ready,) = [r for r in rows if r.measure == warm + local_launch.READY_MEASURE]
    assert warm_ready.ours == 0.11 and warm_ready.baseline == 1.1 and warm_ready.passed is None
    assert not any(r.pending for r in rows)
    assert runner.contract_problems(rows) == [] and runner.exit_code(rows, []) == 1


def test_a_warm_figure_past_ten_forks_misses_its_target():
    samples = launch_samples()
    samples["warm"] = [0.5, 0.45, 0.6]
    (fork,) = [r for r in local_launch.rows(samples, {}) if r.measure.startswith("warm")
               and r.measure.endswith(local_launch.VISIBLE)]  # fmt: skip
    assert fork.passed is False  # 0.5 s > 0.25 s


def test_a_peer_that_cannot_run_is_an_error_row_saying_why():
    samples = launch_samples()
    del samples["trainer"]
    missing = {"trainer": "Trainer SDK: installing kubeflow==0.5.0 failed: no network"}
    rows = local_launch.rows(samples, missing)
    (bad,) = [r for r in rows if r.error]
    assert bad.error == missing["trainer"] and bad.baseline is None
    assert runner.exit_code(rows, runner.contract_problems(rows)) == 2
    assert f"- **{bad.area}**: {bad.error}" in render_markdown(rows)


def test_a_pending_row_without_its_baseline_breaks_the_suite_rule():
    slot = Row("a", "warm", math.nan, None, "", "≤ 1 s", None, pending="not built yet")
    assert runner.contract_problems([slot]) == ["a / warm: no baseline measured in this run"]
    assert "pending" in render_text([slot])


def test_local_scale_rows_give_a_launch_and_a_cpu_row_per_point():
    launch = {n: ([1.0 + n / 10, 1.1], [1.0 + n / 20, 1.05]) for n in (1, 2, 16)}
    cpu = {n: ([0.5 + n / 100], [95.0 + n]) for n in (1, 2, 16)}
    rows = local_scale.rows(launch, cpu)
    assert [r.area for r in rows] == [f"{local_scale.AREA}: {n}" for n in (1, 2, 16)] * 2
    launch_rows, cpu_rows = rows[:3], rows[3:]
    assert all(r.unit == "s" and r.baseline_name.endswith("by hand") for r in launch_rows)
    assert all(r.unit == "% core" and "replicas' own CPU" in r.baseline_name for r in cpu_rows)
    assert cpu_rows[2].ours == 0.66 and cpu_rows[2].baseline == 111.0
    assert cpu_rows[2].passed is True  # 0.66 % ≤ 1 % of 111 %
    sixteen = launch_rows[2]  # medians 1.85 s and 1.425 s: more than 1.2×
    assert (sixteen.ours, sixteen.baseline, sixteen.passed) == (1.85, 1.425, False)
    assert launch_rows[0].passed is True  # 1.1 s ≤ 1.2 × 1.05 s
    assert runner.contract_problems(rows) == []


def test_k8s_scale_rows_give_five_measures_per_point_with_their_targets():
    def sample(threads: float, p99: float, lost: float) -> dict[str, float]:
        return {"threads": threads, "memory_mib": 3.0, "median_ms": 9.0, "p99_ms": p99,
                "lost": lost}  # fmt: skip

    samples = {
        (8, "ours"): [sample(9, 150, 0)],
        (8, "base"): [sample(8, 170, 0)],
        (128, "ours"): [sample(9, 1200, 0)],
        (128, "base"): [sample(128, 1100, 3)],
        (32, "ours"): [sample(9, 300, 0)],  # no baseline sample: no rows for 32
    }
    rows = k8s_scale.rows(samples)
    assert len(rows) == 10
    assert {r.area for r in rows} == {
        f"{k8s_scale.AREA}, {n} pods × {k8s_scale.RATE} lines/s" for n in (8, 128)
    }
    measures = [r.measure for r in rows[:5]]
    assert measures == [
        "threads while following",
        "resident memory growth",
        "line latency, median",
        "line latency, p99",
        "lines lost",
    ]
    big = {r.measure: r for r in rows[5:]}
    threads = big["threads while following"]
    assert threads.passed is True and threads.baseline == 128
    assert big["line latency, p99"].passed is False  # 1200 ms > 1000 ms
    assert big["lines lost"].passed is True and big["lines lost"].baseline == 3
    assert big["resident memory growth"].passed is None
    assert all(r.baseline_name == k8s_scale.BASE_NAME for r in rows)


def test_trainer_sdk_pins_the_installed_torch_so_no_cuda_build_can_match():
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    req = trainer_sdk.torch_requirement()
    assert req.startswith("torch==")
    pinned = Version(req.split("==", 1)[1])
    spec = SpecifierSet(req.split("torch", 1)[1])
    assert spec.contains(pinned)
    if pinned.local:  # a +cpu build pins its label: no CUDA build of that version matches
        for other in ("cu121", "cu128", "rocm6.2"):
            assert not spec.contains(Version(f"{pinned.public}+{other}"))
        assert not spec.contains(Version(pinned.public))


def test_trainer_sdk_job_env_keeps_pip_settings_and_nothing_else_of_ours(monkeypatch):
    monkeypatch.setenv("PIP_FIND_LINKS", "/opt/wheels")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-for-the-job")
    monkeypatch.setenv("KUBECONFIG", "/root/.kube/config")
    env = trainer_sdk.job_env(29999)
    assert env["PIP_FIND_LINKS"] == "/opt/wheels" and env["PET_NPROC_PER_NODE"] == "2"
    assert env["PET_MASTER_PORT"] == "29999"
    assert "AWS_SECRET_ACCESS_KEY" not in env and "KUBECONFIG" not in env


@pytest.mark.parametrize("module", ["kernel", "launchers", "trainer_sdk"])
def test_helper_modules_are_not_benchmarks(module):
    assert module not in runner.discover()
