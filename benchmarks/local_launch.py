"""Local launch: seconds from submit to every replica's first output line.

Three ways to start the same 2-rank DDP rendezvous (import torch, init the gloo
process group, print one line), interleaved per repeat so machine noise hits all:

- **ours**: ``LocalBackend.submit`` of a bundle from ``build_bundle``; the runtime
  shim imports torch and initialises the group before the cell prints. The time of
  each first line is the timestamp the supervisor wrote when it read that line;
- **by hand**: the same two processes started with ``subprocess`` and the PyTorchJob
  environment (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE);
- **torchrun**: ``torchrun --nproc-per-node 2`` running the same script.

``python3 -m benchmarks.local_launch [repeats]`` prints the table.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from benchmarks.table import Row, render_text, summarize

AREA = "local launch"
WORLD = 2
TARGET = 1.2  # at most 1.2x the processes started by hand
READY = "DDL_READY"

# The shim has initialised the group before the cell runs (torch-ddp).
CELL = f"print('{READY}', flush=True)\n"
BY_HAND = f"""\
import os
import torch.distributed as dist
dist.init_process_group("gloo")
print("{READY}", flush=True)
dist.barrier()
dist.destroy_process_group()
os._exit(0)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _time_ours(root: Path) -> float:
    from jupyter_ddl.backends.local import LocalBackend
    from jupyter_ddl.bundle import build_bundle
    from jupyter_ddl.models import JobSpec

    backend = LocalBackend(root=root)
    name = f"bench-{uuid.uuid4().hex[:8]}"
    spec = JobSpec(name=name, strategy="torch-ddp", replicas={"Master": 1, "Worker": WORLD - 1})
    start = time.time()
    backend.submit(spec, build_bundle(CELL))
    seen: dict[str, float] = {}
    deadline = time.monotonic() + 120
    try:
        while len(seen) < WORLD and time.monotonic() < deadline:
            for line in backend.logs(name):
                if line.text == READY and line.time is not None:
                    seen.setdefault(line.replica, line.time)
            time.sleep(0.02)
        if len(seen) < WORLD:
            raise RuntimeError(f"{name}: only {sorted(seen)} printed within 120 s")
        return max(seen.values()) - start
    finally:
        backend.delete(name)


def _first_lines(procs: list[subprocess.Popen[str]], start: float, expect: int) -> float:
    """Seconds until ``expect`` READY lines were read from the processes' stdout."""
    times: list[float] = []
    lock = threading.Lock()

    def pump(p: subprocess.Popen[str]) -> None:
        assert p.stdout is not None
        for line in p.stdout:
            # torchrun's ranks share one pipe, and unbuffered print() writes the text and
            # its newline separately: two ranks can land on one line ("DDL_READYDDL_READY").
            n = line.count(READY)
            if n:
                with lock:
                    times.extend([time.perf_counter()] * n)

    threads = [threading.Thread(target=pump, args=(p,), daemon=True) for p in procs]
    for t in threads:
        t.start()
    for p in procs:
        p.wait(timeout=120)
    for t in threads:
        t.join(timeout=5)
    if len(times) < expect:
        codes = [p.returncode for p in procs]
        raise RuntimeError(
            f"only {len(times)} of {expect} processes printed {READY} (exit codes {codes})"
        )
    return max(times) - start


def _time_by_hand(script: Path) -> float:
    port = str(_free_port())
    start = time.perf_counter()
    procs = []
    for rank in range(WORLD):
        env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
        env.update(RANK=str(rank), WORLD_SIZE=str(WORLD), PYTHONUNBUFFERED="1")
        procs.append(
            subprocess.Popen(
                [sys.executable, str(script)], env=env, stdout=subprocess.PIPE, text=True
            )
        )
    return _first_lines(procs, start, WORLD)


def _time_torchrun(script: Path) -> float:
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(WORLD)]
    argv += ["--master-port", str(_free_port()), str(script)]
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    return _first_lines([proc], start, WORLD)


def run(repeats: int = 5, budget_s: float | None = None) -> list[Row]:
    """Median seconds to every replica's first line: ours vs by hand vs torchrun.

    With ``budget_s``, stops repeating once another round would not fit (at least one
    round always runs, so every row keeps a baseline from the same run)."""
    t0 = time.monotonic()
    ours: list[float] = []
    hand: list[float] = []
    trun: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ddl-bench-launch-") as tmp:
        script = Path(tmp) / "ready.py"
        script.write_text(BY_HAND)
        for i in range(repeats):
            spent = time.monotonic() - t0
            if budget_s is not None and i and spent / i * (i + 1) > 0.9 * budget_s:
                break
            steps = [
                lambda: ours.append(_time_ours(Path(tmp) / "jobs")),
                lambda: hand.append(_time_by_hand(script)),
                lambda: trun.append(_time_torchrun(script)),
            ]
            for step in steps[i % 3 :] + steps[: i % 3]:  # rotate the order per repeat
                step()
    o, o_range = summarize(ours)
    rows = []
    for samples, name in (
        (hand, "same processes started by hand"),
        (trun, "torchrun --nproc-per-node 2"),
    ):
        b, b_range = summarize(samples)
        rows.append(
            Row(
                area=AREA,
                measure=f"submit to every replica's first line, {WORLD} DDP replicas",
                ours=o,
                baseline=b,
                baseline_name=name,
                target=f"≤ {TARGET}× baseline",
                passed=o <= TARGET * b,
                unit="s",
                ours_range=o_range,
                baseline_range=b_range,
            )
        )
    return rows


if __name__ == "__main__":
    print(render_text(run(int(sys.argv[1]) if len(sys.argv) > 1 else 5)))
