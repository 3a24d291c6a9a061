"""The local backend's cost as jobs grow: 1, 2, 4, 8 and 16 replicas.

Per point, in the same run:

- **launch**: seconds from ``LocalBackend.submit`` of an N-replica torch-ddp job to
  every replica's READY (after the gloo rendezvous), against the same N processes
  started by hand (``launchers.py``);
- **supervisor CPU**: N replicas that compute flat out and print 50 lines/s each (a
  chatty training loop) through the product; once every replica has printed, the
  supervisor's own CPU time over a few seconds, as a share of one core, beside the
  replicas' CPU over the same window (the ratio is the supervisor's share of the job).

``python3 -m benchmarks.local_scale [--quick]`` prints the table.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

from benchmarks import launchers
from benchmarks.table import Row, summarize

AREA = "local backend, as replicas grow"
POINTS = (1, 2, 4, 8, 16)
LINES_PER_S = 50
WINDOW_S = 3.0
LAUNCH_TARGET = 1.2  # × by hand, the single-job launch target
SHARE_TARGET = 0.01  # the supervisor's CPU, as a share of what the replicas use

BUSY = """\
import os, time
rate, seconds = float(os.environ["LINES"]), float(os.environ["SECONDS"])
start = time.time()
end, due, n, x = start + seconds, start, 0, 0
while True:
    now = time.time()
    if now >= end:
        break
    x = (x * 31 + 7) % 1000003  # the "training": pure computation between log lines
    if now >= due:
        print(f"step {n} loss {x % 997 / 997:.4f}", flush=True)
        n, due = n + 1, due + 1 / rate
"""


def _say(msg: str) -> None:
    print(f"[local_scale] {msg}", file=sys.stderr, flush=True)


def supervisor_cpu(root: Path, world: int, script: Path) -> tuple[float, float]:
    """(supervisor, replicas) CPU over ``WINDOW_S`` as % of one core, while N busy
    replicas print ``LINES_PER_S`` lines/s each."""
    import psutil

    from jupyter_ddl.backends.local import LocalBackend
    from jupyter_ddl.config import Config
    from jupyter_ddl.core.bundle import build_bundle

    # the bench measures up to 16 replicas on small machines too: the product's bound
    # (4 per core) would refuse them, and its refusal is tested elsewhere. Cold starts
    # only: the curve compares like with like (processes by hand); local_launch has the
    # warm path beside accelerate
    backend = LocalBackend(Config(local_max_processes=64, local_warm_seconds=0), root=root)
    name = f"busy-{uuid.uuid4().hex[:8]}"
    spec = launchers.ddp_spec(
        name,
        world,
        command=[sys.executable, "-S", str(script)],
        # long enough to outlast a slow start on a loaded machine: the job is deleted
        # as soon as the window was measured
        env={"LINES": str(LINES_PER_S), "SECONDS": str(WINDOW_S + 120)},
    )
    backend.submit(spec, build_bundle("pass\n"))  # type: ignore[arg-type]
    try:
        jd = backend.job_dir(name)
        deadline = time.monotonic() + 60
        reps: list[psutil.Process] = []
        while time.monotonic() < deadline:  # steady: every replica has printed
            if len({ln.replica for ln in backend.logs(name)}) >= world:
                # and the supervisor's status names their pids (written a moment after
                # the last one started; they may print before)
                reps = [psutil.Process(r.pid) for r in backend.get(name).replicas if r.pid]
                if len(reps) >= world:
                    break
            time.sleep(0.05)
        else:
            raise RuntimeError(f"{name}: not every replica printed within 60 s")
        sup = psutil.Process(json.loads((jd / "supervisor.json").read_text())["pid"])
        if len(reps) < world:
            raise RuntimeError(f"{name}: {len(reps)} of {world} replicas have a process")
        s0, r0, t0 = _cpu([sup]), _cpu(reps), time.monotonic()
        time.sleep(WINDOW_S)
        s1, r1, t1 = _cpu([sup]), _cpu(reps), time.monotonic()
        return 100 * (s1 - s0) / (t1 - t0), 100 * (r1 - r0) / (t1 - t0)
    finally:
        backend.delete(name)


def _cpu(procs: list) -> float:
    """CPU seconds of the processes' threads, from the scheduler's nanosecond counters
    (``cpu_times`` counts 10 ms ticks: too coarse for a process that mostly sleeps)."""
    total = 0.0
    for p in procs:
        try:
            for task in Path(f"/proc/{p.pid}/task").iterdir():
                total += int((task / "schedstat").read_text().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            t = p.cpu_times()
            total += t.user + t.system
    return total


def run(repeats: int = 3, quick: bool = False, budget_s: float = 300.0) -> list[Row]:
    t0 = time.monotonic()
    points = (1, 2, 4, 16) if quick else POINTS
    repeats = 1 if quick else max(1, repeats)
    launch: dict[int, tuple[list[float], list[float]]] = {n: ([], []) for n in points}
    cpu: dict[int, tuple[list[float], list[float]]] = {n: ([], []) for n in points}
    with tempfile.TemporaryDirectory(prefix="ddl-bench-scale-") as tmp:
        script = launchers.ready_script(Path(tmp))
        busy = Path(tmp) / "busy.py"
        busy.write_text(BUSY)
        for r in range(repeats):
            spent = time.monotonic() - t0
            if r and spent / r * (r + 1) > 0.9 * budget_s:
                break
            for n in points:
                _say(f"repeat {r}, {n} replicas")
                ours, hand = launch[n]
                steps = [
                    lambda n=n, ours=ours: ours.append(
                        launchers.time_backend(Path(tmp) / "jobs", n)
                    ),
                    lambda n=n, hand=hand: hand.append(launchers.time_by_hand(script, n)),
                ]
                for step in steps if r % 2 == 0 else steps[::-1]:
                    step()
                s, rep = supervisor_cpu(Path(tmp) / "jobs", n, busy)
                cpu[n][0].append(s)
                cpu[n][1].append(rep)
    return rows(launch, cpu)


def rows(
    launch: dict[int, tuple[list[float], list[float]]],
    cpu: dict[int, tuple[list[float], list[float]]],
) -> list[Row]:
    out = []
    for n in sorted(launch):
        (o, o_r), (b, b_r) = summarize(launch[n][0]), summarize(launch[n][1])
        out.append(Row(f"{AREA}: {n}", "launch, submit to every replica ready", o, b,
                       "same processes started by hand", f"≤ {LAUNCH_TARGET}× baseline",
                       o <= LAUNCH_TARGET * b, "s", o_r, b_r))  # fmt: skip
    for n in sorted(cpu):
        (o, o_r), (b, b_r) = summarize(cpu[n][0]), summarize(cpu[n][1])
        out.append(Row(f"{AREA}: {n}", f"supervisor CPU, {LINES_PER_S} lines/s per busy replica",
                       o, b, "the replicas' own CPU, same window",
                       f"≤ {SHARE_TARGET:.0%} of baseline", o <= SHARE_TARGET * b, "% core",
                       o_r, b_r))  # fmt: skip
    return out


if __name__ == "__main__":
    from benchmarks.table import render_text

    print(render_text(run(repeats=1, quick="--quick" in sys.argv)))
