"""Benchmark: local log streaming into the notebook dashboard (its table rows).

A local job of ``replicas`` replicas each prints ``rate`` lines per second for
``seconds`` seconds; every line carries its write time. Two readers follow the same job
at the same time; the replicas start printing only once both readers are following, so
their start-up (imports, first status read) is not counted as latency:

* ours: ``JobManager.watch`` → the dashboard's Follower (state + coalesced renders),
  exactly what ``%%distribute`` runs in the kernel;
* baseline: reading the replicas' log files directly (a 10 ms polling tail).

Measured: latency line-written → event-delivered (median, p99), lines lost, notebook
updates per second, and the consumer's memory growth; also the latency from the
supervisor's stamp in the log file (what the reader alone adds: both readers wait the
same for the supervisor).

    python -m benchmarks.log_streaming [--replicas 8] [--rate 2000] [--seconds 10]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.table import Row

CELL = """\
import os, sys, time
gate = time.time() + 120  # the benchmark opens the gate once both readers follow
while not os.path.exists({go!r}) and time.time() < gate:
    time.sleep(0.01)
start = time.time()
n = 0
while time.time() - start < {seconds}:
    for _ in range({burst}):
        print(f"bench {{rank}} {{n}} {{time.time():.6f}}")
        n += 1
    sys.stdout.flush()
    time.sleep(max(0.0, start + n / {rate} - time.time()))
print(f"bench-done {{rank}} {{n}}", flush=True)
"""


class _Counter:
    """A view that renders nothing and counts the updates a notebook would get."""

    def __init__(self) -> None:
        self.updates = 0

    def snapshot(self, state: Any, final: bool) -> int:
        return len(state.merged)

    def push(self, snapshot: Any, final: bool) -> None:
        self.updates += 1


class _Lines:
    """Latency and identity of every benchmark line one reader saw, kept compact (an
    array of floats and a bitmap per replica) so the bookkeeping does not distort the
    reader's memory figure."""

    def __init__(self) -> None:
        self.latencies = array("d")
        self.arrivals = array("d")
        self.after_file = array("d")  # stamped into the log file → delivered
        self.seen: dict[str, bytearray] = {}
        self.wrote: dict[str, int] = {}

    def add(self, text: str, now: float, stamp: float | None) -> None:
        parts = text.split()
        if len(parts) == 4 and parts[0] == "bench":
            bits = self.seen.setdefault(parts[1], bytearray())
            n = int(parts[2])
            if n // 8 >= len(bits):
                bits.extend(bytes(n // 8 + 1024 - len(bits)))
            bits[n // 8] |= 1 << (n % 8)
            written = float(parts[3])
            self.latencies.append(now - written)
            self.arrivals.append(now)
            if stamp is not None:
                self.after_file.append(now - stamp)
        elif len(parts) == 3 and parts[0] == "bench-done":
            self.wrote[parts[1]] = int(parts[2])

    def lost(self) -> int:
        got = sum(bin(b).count("1") for bits in self.seen.values() for b in bits)
        return sum(self.wrote.values()) - got

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        return {
            "after_file_median": (
                statistics.median(self.after_file) if self.after_file else float("nan")
            ),
            "median": statistics.median(lat) if lat else float("nan"),
            "p99": lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else float("nan"),
            "lost": self.lost(),
            "wrote": sum(self.wrote.values()),
            # a view updated once per line would get this many updates in its busiest second
            "lines_per_s_peak": _peak_rate(sorted(self.arrivals)),
        }


def _tail_files(
    logs_dir: Path, lines: _Lines, done: Callable[[], bool], ready: Callable[[], None]
) -> None:
    """Baseline: poll every replica's log file and parse new complete lines."""
    from jupyter_ddl.backends.local.jobdir import parse_log_line

    pos: dict[Path, int] = {}
    ready()
    while True:
        finished = done()
        for path in sorted(logs_dir.glob("*.log")) if logs_dir.is_dir() else []:
            with open(path, "rb") as f:
                f.seek(pos.get(path, 0))
                chunk = f.read(8 << 20)
            end = chunk.rfind(b"\n")
            if end < 0:
                continue
            pos[path] = pos.get(path, 0) + end + 1
            now = time.time()
            for raw in chunk[: end + 1].decode("utf-8", "replace").splitlines():
                stamp, _, text = parse_log_line(raw)
                lines.add(text, now, stamp)
        if finished and all(p.stat().st_size == pos.get(p, 0) for p in logs_dir.glob("*.log")):
            return
        time.sleep(0.01)


class _Peak:
    """Peak RSS growth of this process above its level at start (sampled every 0.1 s)."""

    def __init__(self) -> None:
        import psutil

        self._proc = psutil.Process()
        self.base = self.peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, self._proc.memory_info().rss)

    def growth_mib(self) -> float:
        self._stop.set()
        return (self.peak - self.base) / 2**20


def reader(kind: str, name: str, tail: int) -> dict[str, Any]:
    """One reader process: follow job ``name`` through the job API (``api``) or by
    tailing its log files (``files``) until it ends; returns its figures."""
    from jupyter_ddl.backends.local.jobdir import jobs_root
    from jupyter_ddl.config import Config, data_dir
    from jupyter_ddl.manager import JobManager
    from jupyter_ddl.present.state import DashboardState
    from jupyter_ddl.widgets.follow import Follower

    manager = JobManager(config=Config(log_tail=tail, refresh_hz=10))
    manager.backend("local")  # loaded before the memory baseline: imports are not growth
    lines = _Lines()
    peak = _Peak()

    def ready() -> None:
        print("ready", flush=True)

    out: dict[str, Any] = {}
    if kind == "files":
        _tail_files(
            jobs_root(data_dir()) / name / "logs",
            lines,
            lambda: manager.get(name, "local").state.finished,
            ready,
        )
    else:
        view = _Counter()

        def on_event(event: Any) -> None:
            if event.log is not None:
                lines.add(event.log.text, time.time(), event.log.time)

        follower = Follower(
            lambda stop: manager.watch(name, backend="local", stop=stop),
            DashboardState(name, tail=tail), view, refresh_hz=10, on_event=on_event,
        )  # fmt: skip
        follower.start()
        while not follower.state.events and follower.running:
            time.sleep(0.01)  # following: the first event (the job's status) arrived
        ready()
        follower.join()
        out["updates_per_s"] = _peak_rate(list(follower.render_times))
    out.update(lines.summary(), memory_mib=peak.growth_mib())
    return out


def _spawn(kind: str, name: str, tail: int) -> subprocess.Popen[str]:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.log_streaming",
        "--reader",
        kind,
        "--job",
        name,
        "--tail",
        str(tail),
    ]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, text=True, cwd=str(Path(__file__).parents[1])
    )


def _peak_rate(times: list[float], window: float = 1.0) -> float:
    """The most updates that fell into any ``window`` seconds (what rate limits see)."""
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while t - times[lo] >= window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best / window


def measure(
    replicas: int = 8, rate: int = 2000, seconds: float = 10.0, tail: int = 200
) -> dict[str, Any]:
    """One run: submit the job, follow it with both readers (separate processes, so
    each one's memory is its own), delete it. Latencies in seconds."""
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.manager import JobManager
    from jupyter_ddl.models import JobSpec

    manager = JobManager()
    name = f"bench-logs-{int(time.time())}"
    gate = Path(tempfile.mkdtemp(prefix="ddl-bench-")) / "go"
    code = CELL.format(seconds=seconds, rate=rate, burst=max(1, rate // 100), go=str(gate))
    roles = {"Master": 1, "Worker": replicas - 1} if replicas > 1 else {"Master": 1}
    manager.submit(JobSpec(name, "torch-ddp", roles), build_bundle(code))
    try:
        procs = {kind: _spawn(kind, name, tail) for kind in ("api", "files")}
        for proc in procs.values():
            assert proc.stdout is not None
            proc.stdout.readline()  # "ready" (or EOF when the reader failed)
        gate.touch()
        results = {}
        for kind, proc in procs.items():
            stdout, _ = proc.communicate(timeout=seconds + 600)
            results[kind] = json.loads(stdout.strip().splitlines()[-1])
        results["state"] = manager.get(name, "local").state.value
    finally:
        manager.delete(name, "local")
        manager.close()
        shutil.rmtree(gate.parent, ignore_errors=True)
    return results


def rows(figures: dict[str, Any], replicas: int, rate: int) -> list[Row]:
    ours, base = figures["api"], figures["files"]
    area = f"log streaming, local ({replicas}×{rate} lines/s)"
    files = "reading the log files"
    ms = 1e3
    return [
        Row(
            area,
            "median latency",
            ours["median"] * ms,
            base["median"] * ms,
            files,
            "≤ 250",
            ours["median"] <= 0.25,
            "ms",
        ),
        Row(
            area,
            "p99 latency",
            ours["p99"] * ms,
            base["p99"] * ms,
            files,
            "≤ 1000",
            ours["p99"] <= 1.0,
            "ms",
        ),
        Row(
            area,
            "median latency after the log file",
            ours["after_file_median"] * ms,
            base["after_file_median"] * ms,
            files,
            "",
            None,
            "ms",
        ),
        Row(
            area,
            "lines lost",
            ours["lost"],
            base["lost"],
            files,
            "0",
            ours["lost"] == 0 and ours["wrote"] > 0,
        ),
        Row(
            area,
            "notebook updates, busiest second",
            ours["updates_per_s"],
            base["lines_per_s_peak"],
            "one update per line read from the files",
            "≤ 10",
            ours["updates_per_s"] <= 10,
            "/s",
        ),
        Row(
            area,
            "reader memory growth",
            ours["memory_mib"],
            base["memory_mib"],
            files,
            "bounded (≤ 100)",
            ours["memory_mib"] <= 100,
            "MiB",
        ),
    ]


def run(replicas: int = 8, rate: int = 2000, seconds: float = 10.0) -> list[Row]:
    """One row's run: of ``replicas`` × ``rate`` lines/s for ``seconds``."""
    return rows(measure(replicas, rate, seconds), replicas, rate)


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--replicas", type=int, default=8)
    p.add_argument("--rate", type=int, default=2000)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--reader", choices=["api", "files"], help=argparse.SUPPRESS)
    p.add_argument("--job", help=argparse.SUPPRESS)
    p.add_argument("--tail", type=int, default=200, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.reader:
        print(json.dumps(reader(a.reader, a.job, a.tail)))
        return
    for r in run(a.replicas, a.rate, a.seconds):
        base = (
            ""
            if r.baseline is None
            else f"  (baseline {r.baseline:.1f}{r.unit}: {r.baseline_name})"
        )
        verdict = {True: "ok", False: "MISSED", None: ""}[r.passed]
        print(
            f"{r.area:<38} {r.measure:<34} {r.ours:>9.1f}{r.unit:<4} target {r.target:<16} {verdict}{base}"
        )


if __name__ == "__main__":
    main()
