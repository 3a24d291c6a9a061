"""Training overhead: steps/s of a small DDP job under the product vs launched by hand.

The same training cell runs twice per repeat, as 2 replicas over gloo:

- **ours**: through the product's local backend (``JobManager.submit`` with a bundle
  from ``jupyter_ddl.core.bundle.build_bundle``), exactly as a ``%%distribute`` cell would
  (after the first job its replicas are forked from a warm interpreter, as a user's
  later cells are: a forked replica must train as fast as a fresh one);
- **by hand**: the same cell file started as two subprocesses with the PyTorchJob env
  (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE) and a five-line teardown wrapper.

Steps/s are measured inside the cell, after warm-up steps, so process start-up,
imports and rendezvous are excluded: the figure is what the product costs while the
job trains (log capture, the supervisor, resource sampling). The two variants run
interleaved, in alternating order, so drift on a shared machine hits both alike.

Four rows, built in ``overhead_rows``. *Warm*: every product job after the first is
forked from the spare, which waits idle. *First job, its spare beside it*: each product job is the first of an idle
period (the spares are stopped before it), so it starts cold and starts a spare beside
it, whose import is due while the job trains (it waits for the job to end: see
``boot.BOOT``); the timed steps are longer (``IMPORT_STEPS``), so that an import made
then would fall inside them. That is the issue's "with a spare present and importing".

Two more rows, one per kind of run, read the CPU the product's own processes took
over each product run's timed steps (``helper_cpu``): a bound on the speed they can
have cost, which the machine's noise does not spread as it spreads steps/s.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.helper_cpu import Sampler
from benchmarks.overhead_rows import _held_row, _row
from benchmarks.table import Row

if TYPE_CHECKING:
    from jupyter_ddl.manager import JobManager

IMPORT_STEPS, QUICK_IMPORT_STEPS = 2500, 150  # about 10 s: a torch import fits inside
WARM_SHARE = 0.4  # of a budget, for the warm row; the first-job row's runs are longer
WORLD_SIZE = 2
MARKER = "DDL_BENCH_STEPS_PER_S"
# steps/s, then the timed steps' start and end (epoch seconds: the helpers' CPU is
# read over the same window)
_MARKER_RE = re.compile(MARKER + r" rank=(\d+) ([0-9.]+)(?: ([0-9.]+) ([0-9.]+))?")

# One thread per rank: 2 ranks on a 2-core machine, and both variants get the same
# setting whatever the launcher exports (torchrun would set OMP_NUM_THREADS=1 too).
# The loss line every 10 steps is what real training prints; it makes the product's
# log capture part of what is measured.
CELL = """\
import time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

torch.set_num_threads(1)
if not dist.is_initialized():
    dist.init_process_group("gloo")
torch.manual_seed(0)
net = torch.nn.Sequential(
    torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
)
model = DistributedDataParallel(net)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 128)
y = torch.randint(0, 10, (64,))


def step():
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


for _ in range({warmup}):
    step()
dist.barrier()
start, wall_start = time.perf_counter(), time.time()
for i in range({steps}):
    loss = step()
    if i % 10 == 0:
        print(f"step {{i}} loss {{loss.item():.4f}}", flush=True)
dist.barrier()
elapsed = time.perf_counter() - start
print(f"{marker} rank={{dist.get_rank()}} {{{steps} / elapsed:.3f}} "
      f"{{wall_start:.3f}} {{time.time():.3f}}", flush=True)
"""

# What a careful user runs by hand around the same cell: the clean gloo teardown
# (barrier, destroy, flush, os._exit: a gloo rank can otherwise abort at exit).
BY_HAND_WRAPPER = """\
import os, runpy, sys
import torch.distributed as dist
runpy.run_path(sys.argv[1], run_name="__main__")
if dist.is_initialized():
    dist.barrier()
    dist.destroy_process_group()
sys.stdout.flush(); sys.stderr.flush()
os._exit(0)
"""


def cell_source(steps: int, warmup: int) -> str:
    """The training cell both variants run."""
    return CELL.format(steps=steps, warmup=warmup, marker=MARKER)


def parse_steps_per_s(lines: list[str], world_size: int = WORLD_SIZE) -> float:
    """The job's steps/s from its log lines: the slowest rank's figure (DDP ranks
    move in lockstep, so the slowest one is the job's speed). Raises RuntimeError
    when a rank did not report."""
    by_rank: dict[int, float] = {}
    for line in lines:
        m = _MARKER_RE.search(line)
        if m:
            by_rank[int(m.group(1))] = float(m.group(2))
    missing = sorted(set(range(world_size)) - set(by_rank))
    if missing:
        raise RuntimeError(f"ranks {missing} printed no {MARKER} line")
    return min(by_rank.values())


def parse_window(lines: list[str]) -> tuple[float, float]:
    """The wall-clock span every rank spent in its timed steps (the ranks' spans
    overlap all but a barrier's latency). Raises RuntimeError when no rank gave one."""
    spans = [(float(m.group(3)), float(m.group(4)))
             for m in map(_MARKER_RE.search, lines) if m and m.group(3)]  # fmt: skip
    if not spans:
        raise RuntimeError(f"no {MARKER} line gave its timed span")
    start, end = max(s[0] for s in spans), min(s[1] for s in spans)
    if end <= start:
        raise RuntimeError(f"the ranks' timed spans do not overlap: {spans}")
    return start, end


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_by_hand(
    workdir: Path,
    cell: str,
    *,
    timeout: float = 120.0,
    held: list[dict[str, float]] | None = None,
) -> float:
    """Start the cell as ``WORLD_SIZE`` subprocesses with the PyTorchJob env; steps/s.
    With ``held``, the launching process's CPU seconds per second of the timed steps
    (its wait for the ranks: by hand there is no other helper) is appended to it.

    Raises RuntimeError naming the first rank that failed (the others are stopped at
    once: a surviving gloo rank would wait for its peer for many minutes)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "cell.py").write_text(cell)
    (workdir / "by_hand.py").write_text(BY_HAND_WRAPPER)
    port = free_port()
    procs, logs = [], [workdir / f"rank-{rank}.log" for rank in range(WORLD_SIZE)]
    for rank, log in enumerate(logs):
        env = dict(
            os.environ,
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
            RANK=str(rank),
            WORLD_SIZE=str(WORLD_SIZE),
        )
        with open(log, "wb") as out:  # a file, like a shell redirect: never a full pipe
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(workdir / "by_hand.py"), str(workdir / "cell.py")],
                    env=env,
                    cwd=workdir,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own group, so one kill ends it whole
                )
            )
    # no job directory and no spares: the sampler counts this process's threads only
    sampler = Sampler(workdir / "no-job", workdir / "no-spares") if held is not None else None
    try:
        with sampler or nullcontext():
            _wait_all(procs, logs, timeout)
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    lines = [ln for log in logs for ln in log.read_text().splitlines()]
    if sampler is not None and held is not None:
        held.append(_shares(sampler, lines))
    return parse_steps_per_s(lines)


def _shares(sampler: Sampler, lines: list[str]) -> dict[str, float]:
    """Each kind of helper's CPU seconds per second of the ranks' timed steps."""
    start, end = parse_window(lines)
    return {k: cpu / (end - start) for k, cpu in sampler.helper_cpu(start, end).items()}


def _wait_all(procs: list[subprocess.Popen[bytes]], logs: list[Path], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        codes = [p.poll() for p in procs]
        # every rank that failed by now: a peer's loss can end another rank within
        # the same poll, and which of them failed first cannot be told from here
        failed = [
            f"by-hand rank {rank} exited {code}: {_last_line(logs[rank])}"
            for rank, code in enumerate(codes)
            if code  # non-zero: this rank failed
        ]
        if failed:
            raise RuntimeError("; ".join(failed))
        if all(c == 0 for c in codes):
            return
        time.sleep(0.05)
    raise RuntimeError(f"by-hand run exceeded {timeout:.0f} s")


def _last_line(log: Path) -> str:
    last = log.read_text(errors="replace").strip().splitlines()[-1:]
    return (last or ["(no output)"])[0]


def run_ours(
    manager: JobManager,
    cell: str,
    *,
    timeout: float = 120.0,
    data_dir: Path | None = None,
    held: list[dict[str, float]] | None = None,
) -> float:
    """Submit the cell as a torch-ddp job on the local backend; steps/s. With
    ``data_dir`` and ``held``, each kind of helper's CPU seconds per second of the timed
    steps (``helper_cpu``) is appended to ``held``."""
    from jupyter_ddl.backends.local import warm
    from jupyter_ddl.backends.local.jobdir import jobs_root
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.errors import DDLError
    from jupyter_ddl.models import JobSpec, JobState

    name = f"bench-ddp-{uuid.uuid4().hex[:8]}"
    spec = JobSpec(
        name=name,
        strategy="torch-ddp",
        replicas={"Master": 1, "Worker": WORLD_SIZE - 1},
        dist_backend="gloo",
        backend="local",
    )
    sampler = None
    if data_dir is not None and held is not None:
        # started before the submit: the supervisor's first CPU seconds count too
        sampler = Sampler(jobs_root(data_dir) / name, warm.warm_dir(data_dir))
    with sampler or nullcontext():
        try:
            manager.submit(spec, build_bundle(cell, notebook="benchmarks/training_overhead"))
            status = manager.wait(name, timeout=timeout)
            if not status.state.finished:
                raise RuntimeError(f"product run exceeded {timeout:.0f} s")
            lines = [line.text for line in manager.logs(name)]
            if status.state != JobState.SUCCEEDED:
                why = status.message or (lines[-1] if lines else "(no output)")
                raise RuntimeError(f"product job ended {status.state.value}: {why}")
            if sampler is not None and held is not None:
                held.append(_shares(sampler, lines))
            return parse_steps_per_s(lines)
        finally:
            try:
                manager.delete(name)  # cancels first if it still runs
            except (DDLError, OSError):
                pass  # cleanup must not hide the real error; the data dir goes anyway


@contextmanager
def _private_data_dir() -> Iterator[Path]:
    """Benchmark jobs go to a throw-away data dir, never the user's job list."""
    old = os.environ.get("JUPYTER_DDL_DATA_DIR")
    with tempfile.TemporaryDirectory(prefix="ddl-bench-train-") as tmp:
        os.environ["JUPYTER_DDL_DATA_DIR"] = tmp
        try:
            yield Path(tmp)
        finally:
            from jupyter_ddl.backends.local import warm

            warm.stop_spares(warm.warm_dir(Path(tmp)))  # the warm interpreter jobs started
            if old is None:
                os.environ.pop("JUPYTER_DDL_DATA_DIR", None)
            else:
                os.environ["JUPYTER_DDL_DATA_DIR"] = old


def run(
    repeats: int = 5, quick: bool = False, steps: int | None = None, budget_s: float | None = None
) -> list[Row]:
    """The warm row, then the first-job row (see the module's docstring).

    With ``budget_s`` each row stops repeating early (after at least one pair) when
    another pair might not fit in its share of the budget: start-up costs swing with
    the machine's load, and a row with fewer repeats beats no row."""
    from jupyter_ddl.backends.local import warm
    from jupyter_ddl.manager import JobManager

    steps = steps or (150 if quick else 1500)  # 400 steps (2 s) spread ±20 % per pair
    long_steps = QUICK_IMPORT_STEPS if quick else IMPORT_STEPS
    warmup = 10 if quick else 30
    share = (budget_s * WARM_SHARE, budget_s * (1 - WARM_SHARE)) if budget_s else (None, None)
    with _private_data_dir() as tmp:
        manager = JobManager()
        try:
            held_warm: tuple[list[dict[str, float]], list[dict[str, float]]] = ([], [])
            held_first: tuple[list[dict[str, float]], list[dict[str, float]]] = ([], [])
            warm_rows = _pairs(manager, tmp, cell_source(steps, warmup), repeats, share[0],
                               held=held_warm)  # fmt: skip
            spares = warm.warm_dir(tmp)

            def first_job() -> None:  # no spare: the next job starts cold and starts one
                warm.stop_spares(spares)

            first = _pairs(manager, tmp, cell_source(long_steps, warmup), repeats, share[1],
                           before_ours=first_job, tag="first", held=held_first)  # fmt: skip
        finally:
            manager.close()
    return [
        _row(f"steps/s, torch-ddp 2 replicas gloo, {steps} steps, {len(warm_rows[0])} runs",
             *warm_rows),
        _row(f"steps/s, first job of an idle period with its spare started beside it, "
             f"{long_steps} steps, {len(first[0])} runs", *first),
        _held_row(f"warm, {steps} steps", *held_warm),
        _held_row(f"first job with its spare beside it, {long_steps} steps", *held_first),
    ]  # fmt: skip


def _pairs(
    manager: JobManager,
    tmp: Path,
    cell: str,
    repeats: int,
    budget_s: float | None,
    before_ours: Callable[[], None] | None = None,
    tag: str = "warm",
    held: tuple[list[dict[str, float]], list[dict[str, float]]] | None = None,
) -> tuple[list[float], list[float]]:
    """(ours, by hand): ``repeats`` pairs, interleaved, or fewer when the budget ends;
    with ``held``, each run's helpers' CPU shares are added to it: (ours, by hand)."""
    ours: list[float] = []
    hand: list[float] = []
    t0, worst = time.monotonic(), 0.0
    for i in range(repeats):
        pair_start = time.monotonic()
        # Alternate who goes first so a load change mid-run hits both sides.
        order = [("hand", hand), ("ours", ours)]
        for kind, samples in order if i % 2 == 0 else order[::-1]:
            if kind == "hand":
                samples.append(run_by_hand(tmp / f"hand-{tag}-{i}", cell,
                                           held=held[1] if held else None))  # fmt: skip
            else:
                if before_ours is not None:
                    before_ours()
                samples.append(run_ours(manager, cell, data_dir=tmp,
                                        held=held[0] if held else None))  # fmt: skip
        worst = max(worst, time.monotonic() - pair_start)
        # 1.5× the slowest pair so far: on a loaded machine one pair can take twice as
        # long as the one before it.
        if budget_s and time.monotonic() - t0 + 1.5 * worst > 0.8 * budget_s:
            break
    return ours, hand


if __name__ == "__main__":
    from benchmarks.table import render_text

    print(render_text(run(repeats=int(sys.argv[1]) if len(sys.argv) > 1 else 3)))
