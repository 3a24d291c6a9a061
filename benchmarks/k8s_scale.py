"""Following many pods' logs, against the Kubernetes API double: the cost curve.

One PyTorchJob of 8, 32 and 128 pods whose replicas each write 100 lines/s (in ten
bursts a second, as a training loop logs) for a few seconds, every line carrying its
write time. Per point, in the same run:

- **ours**: ``KubernetesBackend.watch`` (one selector thread and a few opener threads
  follow every container, see ``jupyter_ddl/backends/kubernetes/multiplex.py``);
- **baseline**: one thread per pod, each blocked in ``read_namespaced_pod_log(follow=True)``
  as soon as a pod watch shows its container running: the usual way (and ours before).

Measured in this process while it follows: threads (the most at once, minus those
before), resident memory growth, line latency (delivered − written; lines written
before a stream could open count too), and lines never delivered. The double runs in
its own process (started through its public entry points), so it does not share our
GIL; it and the pods share the machine's cores with us.

``python3 -m benchmarks.k8s_scale [--quick]`` prints the table.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import threading
import time
import uuid
from array import array
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.k8s_logs import serve_double
from benchmarks.table import Row, summarize

AREA = "following pods, Kubernetes API double"
ROOT = Path(__file__).resolve().parent.parent
POINTS = (8, 32, 128)
RATE = 100  # lines/s per pod
P99_TARGET_MS = 1000.0
THREADS_TARGET = 16  # ours, at every point
BASE_NAME = "one thread per pod (read_namespaced_pod_log follow)"

# Bursts of RATE/10 lines every 0.1 s: a pod that wrote each line on its own would
# cost the double (which runs every pod as a local process) more than the follower.
CELL = """\
import os, sys, time
rank, rate, seconds = os.environ["RANK"], int(os.environ["RATE"]), float(os.environ["SECONDS"])
burst, n, out = max(1, rate // 10), int(rate * seconds), sys.stdout
t0, i = time.time(), 0
while i < n:
    delay = t0 + i / rate - time.time()
    if delay > 0:
        time.sleep(delay)
    now, k = time.time(), min(burst, n - i)
    out.write("".join(f"L {rank} {j} {now:.6f}\\n" for j in range(i, i + k)))
    out.flush()
    i += k
open(os.path.join(os.environ["MARKS"], "done-" + rank), "w").close()
while rank == "0" and len(os.listdir(os.environ["MARKS"])) < int(os.environ["WORLD_SIZE"]):
    time.sleep(0.05)  # the master's end ends a PyTorchJob: wait for the others
"""


class Tally:
    """What arrived, in fixed memory per line (an 8-byte latency, a byte per line
    number), so the memory growth measured is the follower's, not this record's."""

    def __init__(self, pods: int, lines: int) -> None:
        self.latency = array("d")
        self.seen = {str(r): bytearray(lines) for r in range(pods)}
        self.lock = threading.Lock()

    def add(self, text: str, now: float) -> None:
        parts = text.split(" ")
        if len(parts) != 4 or parts[0] != "L":
            return
        marks = self.seen.get(parts[1])
        i = int(parts[2])
        if marks is not None and i < len(marks):
            with self.lock:
                marks[i] = 1
                self.latency.append(now - float(parts[3]))

    def stats(self) -> dict[str, float]:
        lat = sorted(self.latency)
        delivered = sum(sum(m) for m in self.seen.values())
        expected = sum(len(m) for m in self.seen.values())
        return {
            "median_ms": 1000 * statistics.median(lat) if lat else float("inf"),
            "p99_ms": 1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else float("inf"),
            "lost": float(expected - delivered),
        }


def _say(msg: str) -> None:
    print(f"[k8s_scale] {msg}", file=sys.stderr, flush=True)


def _spec(pods: int, seconds: float, marks: Path) -> Any:
    from jupyter_ddl.manifests import CODE_DIR
    from jupyter_ddl.models import CleanPodPolicy, JobSpec

    # cleanPodPolicy None: no pod is deleted under a follower that is still reading it.
    # python -S: 128 interpreters start on 2 cores; site's imports are not the point.
    return JobSpec(
        clean_pod_policy=CleanPodPolicy.NONE,
        name=f"scale-{uuid.uuid4().hex[:6]}",
        strategy="torch-ddp",
        replicas={"Master": 1, "Worker": pods - 1},
        command=["python", "-S", "-u", f"{CODE_DIR}/cell.py"],
        env={"RATE": str(RATE), "SECONDS": str(seconds), "MARKS": str(marks)},
    )


class Sampler:
    """Threads and resident memory of this process, sampled every 20 ms."""

    def __init__(self) -> None:
        import psutil

        self.proc = psutil.Process()
        self.threads = self.rss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        time.sleep(0.05)  # counted in the "before" figures: it is ours, not theirs

    def _loop(self) -> None:
        while not self._stop.wait(0.02):
            self.threads = max(self.threads, self.proc.num_threads())
            self.rss = max(self.rss, self.proc.memory_info().rss)

    def measure(self, fn: Callable[[], None]) -> tuple[int, float]:
        """Run ``fn``; the most threads beyond those before, and RSS growth (MiB)."""
        time.sleep(0.1)
        threads0, rss0 = self.proc.num_threads(), self.proc.memory_info().rss
        self.threads, self.rss = threads0, rss0
        fn()
        time.sleep(0.05)
        return self.threads - threads0, (self.rss - rss0) / 2**20

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def ours(backend: Any, name: str, timeout: float, tally: Tally) -> None:
    from jupyter_ddl.models import EventKind

    stop = threading.Event()
    timer = threading.Timer(timeout, stop.set)
    timer.start()
    try:
        for ev in backend.watch(name, stop=stop):
            if ev.kind == EventKind.LOG and ev.log is not None:
                tally.add(ev.log.text, time.time())
    finally:
        timer.cancel()


def per_pod_threads(conn: Any, name: str, pods: int, timeout: float, tally: Tally) -> None:
    """The baseline: a pod watch, and one blocking follower thread per started pod."""
    from jupyter_ddl.core.kinds import PYTORCHJOB

    core, ns = conn.client("CoreV1Api"), conn.namespace
    followed: dict[str, threading.Thread] = {}
    deadline = time.monotonic() + timeout

    def follow(pod: str) -> None:
        resp = core.read_namespaced_pod_log(pod, ns, follow=True, _preload_content=False)
        pending = b""
        try:
            for chunk in resp.stream(65536, decode_content=False):
                now = time.time()
                *lines, pending = (pending + chunk).split(b"\n")
                for raw in lines:
                    tally.add(raw.decode(), now)
        finally:
            resp.release_conn()

    selector = PYTORCHJOB.pod_selector(name)
    while len(followed) < pods and time.monotonic() < deadline:
        resp = core.list_namespaced_pod(ns, label_selector=selector, watch=True,
                                        timeout_seconds=5, _preload_content=False)  # fmt: skip
        try:
            for raw in resp.stream(65536, decode_content=False):
                for line in raw.split(b"\n"):
                    pod = json.loads(line)["object"] if line.strip() else {}
                    cs = ((pod.get("status") or {}).get("containerStatuses") or [{}])[0]
                    pname = (pod.get("metadata") or {}).get("name")
                    if pname and cs.get("containerID") and pname not in followed:
                        followed[pname] = threading.Thread(target=follow, args=(pname,))
                        followed[pname].start()
                if len(followed) >= pods:
                    break
        finally:
            resp.release_conn()
    for t in followed.values():
        t.join(max(0.0, deadline - time.monotonic()))


def run(repeats: int = 2, quick: bool = False, budget_s: float = 240.0) -> list[Row]:
    """Rows per point: threads, memory growth, latency median and p99, lines lost."""
    t0 = time.monotonic()
    sys.path.insert(0, str(ROOT))
    from jupyter_ddl.backends.kubernetes import KubernetesBackend
    from jupyter_ddl.config import Config
    from jupyter_ddl.core.bundle import build_bundle

    seconds = 3.0 if quick else 5.0
    repeats = 1 if quick else max(1, min(repeats, 3))
    samples: dict[tuple[int, str], list[dict[str, float]]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="k8s-scale-") as tmp,
        serve_double(Path(tmp) / "kc") as kc,
    ):
        backend = KubernetesBackend(
            Config(backend="kubernetes"), kubeconfig=str(kc), sa_dir=Path(tmp), usage_every=0
        )
        sampler = Sampler()
        try:
            for r in range(repeats):
                for pods in POINTS:
                    spent = time.monotonic() - t0
                    if r and spent / r * (r + 1) > 0.9 * budget_s:
                        break
                    order = ("ours", "base") if (r + pods) % 2 == 0 else ("base", "ours")
                    for who in order:
                        marks = Path(tmp) / f"marks-{r}-{pods}-{who}"
                        marks.mkdir()
                        spec = _spec(pods, seconds, marks)
                        _say(f"repeat {r}, {pods} pods, {who}")
                        backend.submit(spec, build_bundle(CELL))
                        timeout, tally = seconds + 60, Tally(pods, int(RATE * seconds))
                        fn = (
                            partial(ours, backend, spec.name, timeout, tally)
                            if who == "ours"
                            else partial(
                                per_pod_threads, backend.conn, spec.name, pods, timeout, tally
                            )
                        )
                        threads, mem = sampler.measure(fn)
                        stats = tally.stats()
                        stats.update(threads=float(threads), memory_mib=mem)
                        samples.setdefault((pods, who), []).append(stats)
                        backend.delete(spec.name)
        finally:
            sampler.close()
            backend.close()
    return rows(samples)


def rows(samples: dict[tuple[int, str], list[dict[str, float]]]) -> list[Row]:
    out = []
    for pods in sorted({p for p, _ in samples}):
        if (pods, "base") not in samples or (pods, "ours") not in samples:
            continue
        area = f"{AREA}, {pods} pods × {RATE} lines/s"
        for key, measure, unit, target, ok in (
            ("threads", "threads while following", "", f"≤ {THREADS_TARGET}",
             lambda o: o <= THREADS_TARGET),
            ("memory_mib", "resident memory growth", "MiB", "n/a", None),
            ("median_ms", "line latency, median", "ms", "n/a", None),
            ("p99_ms", "line latency, p99", "ms", f"≤ {P99_TARGET_MS:g} ms",
             lambda o: o <= P99_TARGET_MS),
            ("lost", "lines lost", "", "0", lambda o: o == 0),
        ):  # fmt: skip
            o, o_r = summarize([s[key] for s in samples[(pods, "ours")]])
            b, b_r = summarize([s[key] for s in samples[(pods, "base")]])
            passed = ok(o) if ok is not None else None
            out.append(Row(area, measure, o, b, BASE_NAME, target, passed, unit, o_r, b_r))
    return out


if __name__ == "__main__":
    from benchmarks.table import render_text

    print(render_text(run(quick="--quick" in sys.argv)))
