"""Warm availability over a realistic sequence: what a notebook user sees cell after cell.

One notebook kernel runs ``%%distribute --strategy torch-ddp --replicas 2`` cells
whose ranks print READY, ``JOBS`` of them, ``GAPS`` seconds apart (drawn with a fixed
seed). Between them, as a user's other work would: a 2-rank training job of the same
notebook starts before the third launch and trains through several more, and before
(or after, alternately) each of our launches a peer's launch runs on the same machine:
``accelerate.notebook_launcher`` forking a second kernel, and the same two processes
started by hand. Every launch is timed as the user sees it: from sending the cell to
both ranks' lines in the dashboard (``kernel.py``); accelerate's and by hand from the
call to both ranks' process group up.

Rows: the fraction of our jobs after the first that started warm (no ``cold start:``
line; accelerate's fork never imports, its fraction is 1), and the median and p90
launch of all ours beside accelerate's and by hand, as ratios. A peer that cannot run
(accelerate not importable) is a row that says so.

``DDL_BENCH_SEQ_JOBS`` and ``DDL_BENCH_SEQ_GAPS`` (``"5,30"``) change the sequence;
``--quick`` runs 3 jobs 0.2–0.5 s apart (the harness, not a figure).
"""

from __future__ import annotations

import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import launchers
from benchmarks.table import Row, summarize
from jupyter_ddl.backends.local import warm

AREA = "warm availability, a realistic sequence"
JOBS, GAPS, TRAIN_S = 10, (5.0, 30.0), 60.0
QUICK_JOBS, QUICK_GAPS, QUICK_TRAIN_S = 3, (0.2, 0.5), 3.0
TRAIN_BEFORE = 2  # the training job starts before this launch (0-based)
SEED = 24
WARM_TARGET, FORK_TARGET, P90_TARGET_S = 0.9, 3.0, 0.5
# of a budget, for the gaps; the rest: kernels, launches and peers (by hand: 3–12 s each)
GAP_SHARE = 0.45
ACCELERATE = "accelerate.notebook_launcher (forks the kernel)"
HAND = "same processes started by hand"
SEEN = "cell to both ranks' lines in the dashboard"

TRAIN_CELL = """\
%%distribute --strategy torch-ddp --replicas 2
import time, torch
torch.set_num_threads(1)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(256, 256))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
end = time.time() + {seconds}
while time.time() < end:
    loss = model(torch.randn(64, 256)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
# after the training cell: its dashboard is not one the launch watcher should pick
FORGET_TRAINING = "_bench_seen.update(_bench_magics.dashboards)\n"
# before the kernels go: the jobs they started end with the benchmark (the short form's
# training job still runs at its last launch), their processes waited for
END_JOBS = """\
for _j in _bench_magics.manager.list():
    _bench_magics.manager.delete(_j.name)
"""
# what the job's first lines say of its start, before the collect deletes it
COLD_LINE = (
    '_bench_out["cold"] = next((ln.text for ln in _m.logs(_bench_out["name"]) '
    'if ln.text.startswith("cold start:")), None)\n'
)


def _say(msg: str) -> None:
    print(f"[warm_sequence] {msg}", file=sys.stderr, flush=True)


def settings(
    quick: bool, environ: dict[str, str] | None = None
) -> tuple[int, tuple[float, float], float]:
    """(jobs, gaps, training seconds): the defaults, quick's, or the environment's;
    a bad value is one line naming it."""
    env = os.environ if environ is None else environ
    jobs, gaps, train = (QUICK_JOBS, QUICK_GAPS, QUICK_TRAIN_S) if quick else (JOBS, GAPS, TRAIN_S)
    if "DDL_BENCH_SEQ_JOBS" in env:
        try:
            jobs = int(env["DDL_BENCH_SEQ_JOBS"])
        except ValueError:
            jobs = 0
        if not 2 <= jobs <= 100:
            raise ValueError(
                f"DDL_BENCH_SEQ_JOBS={env['DDL_BENCH_SEQ_JOBS']!r}: a whole number 2–100"
            )
    if "DDL_BENCH_SEQ_GAPS" in env:
        text = env["DDL_BENCH_SEQ_GAPS"]
        try:
            low, high = (float(x) for x in text.split(","))
        except ValueError:
            low = high = -1.0
        if not 0 <= low <= high <= 600:
            raise ValueError(
                f"DDL_BENCH_SEQ_GAPS={text!r}: two seconds 'LOW,HIGH', 0 ≤ LOW ≤ HIGH ≤ 600"
            )
        gaps = (low, high)
    return jobs, gaps, train


def fit(jobs: int, gaps: tuple[float, float], budget_s: float | None) -> tuple[float, float]:
    """The gaps, shrunk in proportion when waiting them all would take more than
    ``GAP_SHARE`` of the budget (``scripts/bench`` runs every module in 25 minutes)."""
    room = GAP_SHARE * budget_s if budget_s else math.inf
    total = (jobs - 1) * (gaps[0] + gaps[1]) / 2
    if total <= room:
        return gaps
    f = room / total
    return (gaps[0] * f, gaps[1] * f)


def p90(samples: list[float]) -> float:
    """The nearest-rank 90th percentile."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def run(repeats: int = 1, quick: bool = False, budget_s: float | None = None) -> list[Row]:
    """One sequence (``repeats`` is not used: the sequence is the repeat)."""
    from benchmarks.kernel import COLLECT_OURS, OursInKernel, PeersInKernel, _bench, kernel_env

    jobs, gaps, train_s = settings(quick)
    gaps = fit(jobs, gaps, budget_s)
    rng = random.Random(SEED)
    ours: list[float] = []
    colds: list[str | None] = []
    fork: list[float] = []
    hand: list[float] = []
    missing: str | None = None
    with tempfile.TemporaryDirectory(prefix="ddl-bench-seq-") as tmp:
        from benchmarks.kernel import Kernel

        env = kernel_env(Path(tmp) / "data")
        kernels = [Kernel(env, Path(tmp))]
        try:
            launch = OursInKernel(kernels[0])
            collect = COLLECT_OURS.replace("_m.wait(", COLD_LINE + "_m.wait(", 1)
            peers = None
            try:
                kernels.append(Kernel(env, Path(tmp)))
                peers = PeersInKernel(kernels[-1])
            except RuntimeError as e:  # accelerate (or ipyparallel) is not importable
                missing = f"accelerate's fork not measured: {str(e)[:200]}"
            script = launchers.ready_script(Path(tmp))

            def ours_once() -> None:
                from benchmarks.kernel import ARM_OURS, READY, TIMED_OURS

                k = launch.kernel
                k.run(ARM_OURS.format(ranks=2))
                sent, _ = k.run(TIMED_OURS.format(ranks=2, ready=READY))
                got = _bench(k.run(collect.format(ready=READY))[1])
                if "visible" not in got:
                    raise RuntimeError("the READY lines never reached the dashboard")
                ours.append(got["visible"] - sent)
                colds.append(got.get("cold"))
                _say(f"job {len(ours)}: {ours[-1]:.3f} s, {got.get('cold') or 'warm'}")

            def peers_once() -> None:
                if peers is not None:
                    fork.append(peers.accelerate())
                hand.append(launchers.time_by_hand(script, 2))

            for i in range(jobs):
                if i:
                    time.sleep(rng.uniform(*gaps))
                if i == TRAIN_BEFORE:
                    launch.kernel.run(TRAIN_CELL.format(seconds=train_s) + "\n")
                    launch.kernel.run(FORGET_TRAINING)
                    _say(f"training job started ({train_s:g} s)")
                for step in (ours_once, peers_once) if i % 2 == 0 else (peers_once, ours_once):
                    step()
        finally:
            try:
                kernels[0].run(END_JOBS, timeout=120)
            except RuntimeError as e:  # set-up failed before the magics loaded: no jobs
                _say(f"ending the jobs: {e}")
            for k in kernels:
                try:
                    k.close()
                except Exception:  # noqa: BLE001 - a kernel already gone
                    pass
            warm.stop_spares(warm.warm_dir(Path(tmp) / "data"))
    area = f"{AREA} ({jobs} cells {gaps[0]:.2g}–{gaps[1]:.2g} s apart)"
    return rows(ours, colds, fork, hand, missing, area)


def rows(
    ours: list[float],
    colds: list[str | None],
    fork: list[float],
    hand: list[float],
    missing: str | None = None,
    area: str = AREA,
) -> list[Row]:
    """The sequence's rows: warm fraction, median and p90 beside the fork and by hand."""
    later = colds[1:]
    fraction = sum(1 for c in later if c is None) / len(later) if later else math.nan
    out = [
        Row(area, "fraction of jobs after the first that started warm", fraction, 1.0,
            "accelerate's fork (never imports)", f"≥ {WARM_TARGET:g}",
            fraction >= WARM_TARGET, ""),
    ]  # fmt: skip
    med, rng_ = summarize(ours)
    high = p90(ours)
    if fork:
        f_med, f_rng = summarize(fork)
        out.append(Row(area, f"{SEEN}, median", med, f_med, ACCELERATE, f"≤ {FORK_TARGET:g}× baseline",
                       med <= FORK_TARGET * f_med, "s", rng_, f_rng))  # fmt: skip
        out.append(Row(area, f"{SEEN}, p90", high, p90(fork), ACCELERATE, f"≤ {P90_TARGET_S:g} s",
                       high <= P90_TARGET_S, "s"))  # fmt: skip
    else:
        why = missing or "accelerate's fork not measured"
        out.append(Row(area, f"{SEEN}, median vs accelerate", math.nan, None, ACCELERATE,
                       f"≤ {FORK_TARGET:g}× baseline", False, error=why))  # fmt: skip
    h_med, h_rng = summarize(hand)
    out.append(Row(area, f"{SEEN}, median", med, h_med, HAND, "n/a", None, "s", rng_, h_rng))
    out.append(Row(area, f"{SEEN}, p90", high, p90(hand), HAND, f"≤ {P90_TARGET_S:g} s",
                   high <= P90_TARGET_S, "s"))  # fmt: skip
    return out


if __name__ == "__main__":
    from benchmarks.table import render_text

    print(render_text(run(quick="--quick" in sys.argv)))
