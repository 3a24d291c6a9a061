"""Local launch: a 2-rank gloo DDP rendezvous, ours beside every other way to start it.

Each way ends with both ranks' process group initialised; all are measured in the
same run, interleaved (the order rotates per repeat) so machine noise hits all:

- **ours**, the figure a user feels: a ``%%distribute --strategy torch-ddp --replicas 2``
  cell sent to a real kernel, until both ranks' READY lines are in the cell's
  dashboard (the job API's watch stream); and, secondary, until the ranks were ready
  (the supervisor's stamps of those lines). See ``kernel.py``. Twice: **cold**, a
  session's first torch job (no warm interpreter is running: the job starts fresh
  interpreters and a spare starts beside it), and **warm**, a job handed to a ready
  spare supervisor that forks the replicas (the spare is waited for, untimed);
- ``accelerate.notebook_launcher(fn, num_processes=2)`` in a kernel (it forks it);
- ipyparallel: ``ipp.Cluster(n=2)`` started from a kernel, then an init on each engine;
- the Kubeflow Trainer SDK's ``LocalProcessBackend`` (a venv and a pip install per job;
  see ``trainer_sdk.py``: the SDK runs from a venv of its own; once per run, it takes
  tens of seconds);
- ``torchrun --nproc-per-node 2`` and the two processes started by hand, from a
  terminal (``launchers.py``).

accelerate and ipyparallel come with ``pip install -e '.[bench]'``; a peer that cannot
run is a failed row that says why. The warm row's targets are ≤ 0.25 s and ≤ 10×
accelerate's fork; the cold rows keep theirs against torchrun and the processes by hand.

``python3 -m benchmarks.local_launch [repeats]`` prints the table.
"""

from __future__ import annotations

import math
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks import launchers
from benchmarks.table import Row, summarize
from jupyter_ddl.backends.local import warm

if TYPE_CHECKING:
    from benchmarks.kernel import Kernel

AREA = "local launch, 2-rank gloo rendezvous"
VISIBLE = "cell to both ranks' lines in the notebook's event stream"
READY_MEASURE = "cell to both ranks ready (supervisor's stamps)"
WARM = "warm replica interpreters"
COLD = "cold (a session's first job)"
SPARE_WAIT = 120.0  # longest wait for a spare to listen before a warm run
BY_HAND_TARGET = 1.2  # × the same processes started by hand
# "cold no slower than today": today, on a quiet machine, our cell took 0.75× torchrun
TORCHRUN_TARGET, TORCHRUN_TODAY = 0.8, 0.75
WARM_TARGET_S, WARM_VS_FORK = 0.25, 10.0

PEERS = {
    "accelerate": "accelerate.notebook_launcher (forks the kernel)",
    "ipyparallel": "ipyparallel: ipp.Cluster(n=2) + an init on each engine",
    "trainer": "Kubeflow Trainer SDK LocalProcessBackend (venv + pip per job)",
    "torchrun": "torchrun --nproc-per-node 2",
    "hand": "same processes started by hand",
}


def _say(msg: str) -> None:
    print(f"[local_launch] {msg}", file=sys.stderr, flush=True)


class Ways:
    """Every way to launch, each callable returning seconds (or raising)."""

    def __init__(self, tmp: Path, quick: bool) -> None:
        from benchmarks.kernel import OursInKernel, PeersInKernel, kernel_env

        self.tmp, self.script = tmp, launchers.ready_script(tmp)
        self._env = kernel_env(tmp / "data")
        self.spares = warm.warm_dir(tmp / "data")
        self._kernels: list[Kernel] = []
        self.ours = OursInKernel(self._kernel())
        self.peers: PeersInKernel | None = None
        self.missing: dict[str, str] = {}
        try:
            self.peers = PeersInKernel(self._kernel())
        except RuntimeError as e:  # accelerate or ipyparallel not installed
            self.missing["accelerate"] = self.missing["ipyparallel"] = str(e)
        self.ready: list[float] = []
        self.warm_ready: list[float] = []

    def _kernel(self) -> Kernel:
        from benchmarks.kernel import Kernel

        k = Kernel(self._env, self.tmp)
        self._kernels.append(k)
        return k

    def visible(self) -> float:
        """A first job: no spare is running (those left by earlier runs are stopped)."""
        warm.stop_spares(self.spares)
        shown, ready = self.ours.time()
        self.ready.append(ready)
        self._spare_ready()
        return shown

    def warm(self) -> float:
        """A job handed to a ready spare (the one the last job started)."""
        self._spare_ready()
        shown, ready = self.ours.time()
        self.warm_ready.append(ready)
        self._spare_ready()
        return shown

    def _spare_ready(self) -> None:
        """Wait (untimed) for the spare a job started: its import of torch then slows
        neither the next way measured nor a warm run."""
        deadline = time.monotonic() + SPARE_WAIT
        while not list(self.spares.glob("*.sock")):
            if time.monotonic() > deadline:
                raise RuntimeError(f"no warm interpreter listened in {SPARE_WAIT:.0f} s")
            time.sleep(0.05)

    def accelerate(self) -> float:
        assert self.peers is not None
        try:
            return self.peers.accelerate()
        except RuntimeError:
            # a fork of a kernel can hang on a lock another thread held: a new kernel
            from benchmarks.kernel import PeersInKernel

            _say("accelerate: no answer; once more in a fresh kernel")
            self.peers.kernel.close()
            self.peers = PeersInKernel(self._kernel())
            return self.peers.accelerate()

    def ipyparallel(self) -> float:
        assert self.peers is not None
        return self.peers.ipyparallel()

    def trainer(self) -> float:
        from benchmarks.trainer_sdk import time_trainer_sdk

        return time_trainer_sdk()

    def torchrun(self) -> float:
        return launchers.time_torchrun(self.script, 2)

    def hand(self) -> float:
        return launchers.time_by_hand(self.script, 2)

    def close(self) -> None:
        for k in self._kernels:
            try:
                k.close()
            except Exception:  # noqa: BLE001 - a kernel already gone
                pass
        warm.stop_spares(self.spares)  # after the kernels: none starts after this


def run(repeats: int = 5, quick: bool = False, budget_s: float | None = None) -> list[Row]:
    """Medians of every way; the Trainer SDK once (it installs torch per job)."""
    t0 = time.monotonic()
    repeats = 1 if quick else max(1, repeats)
    samples: dict[str, list[float]] = {k: [] for k in ("visible", "warm", *PEERS)}
    with tempfile.TemporaryDirectory(prefix="ddl-bench-launch-") as tmp:
        ways = Ways(Path(tmp), quick)
        try:
            ways.visible()  # first use in a kernel imports the local backend: not timed
            ways.ready.clear()
            if ways.peers is not None:
                ways.accelerate()
            order: list[tuple[str, Callable[[], float]]] = [
                ("visible", ways.visible),
                ("warm", ways.warm),
                ("accelerate", ways.accelerate),
                ("ipyparallel", ways.ipyparallel),
                ("torchrun", ways.torchrun),
                ("hand", ways.hand),
            ]
            order = [(k, f) for k, f in order if k not in ways.missing]
            for i in range(repeats):
                spent = time.monotonic() - t0
                if budget_s is not None and i and spent / i * (i + 1) > 0.75 * budget_s:
                    break
                for key, fn in order[i % len(order) :] + order[: i % len(order)]:
                    _say(f"repeat {i}: {key}")
                    samples[key].append(fn())
                if i == 0:
                    _say("Kubeflow Trainer SDK (venv + pip install)")
                    try:
                        samples["trainer"].append(ways.trainer())
                    except (RuntimeError, OSError) as e:  # its venv could not be made
                        ways.missing["trainer"] = str(e)[:300]
            samples["ready"], samples["warm_ready"] = ways.ready, ways.warm_ready
        finally:
            ways.close()
    return rows(samples, ways.missing)


def rows(samples: dict[str, list[float]], missing: dict[str, str]) -> list[Row]:
    vis, vis_r = summarize(samples["visible"])
    out = []
    for key, name in PEERS.items():
        if key in missing or not samples.get(key):
            out.append(Row(AREA, f"{COLD}: {VISIBLE} vs {key}", math.nan, None, name, "", False,
                           error=missing.get(key, "not measured")))  # fmt: skip
            continue
        b, b_r = summarize(samples[key])
        target, passed = "n/a", None
        if key == "hand":
            target, passed = f"≤ {BY_HAND_TARGET}× baseline", vis <= BY_HAND_TARGET * b
        elif key == "torchrun":
            target = f"≤ {TORCHRUN_TARGET}× baseline (today {TORCHRUN_TODAY}×)"
            passed = vis <= TORCHRUN_TARGET * b
        out.append(Row(AREA, f"{COLD}: {VISIBLE}", vis, b, name, target, passed, "s", vis_r, b_r))
    if samples.get("ready") and samples.get("hand"):
        (o, o_r), (b, b_r) = summarize(samples["ready"]), summarize(samples["hand"])
        out.append(Row(AREA, f"{COLD}: {READY_MEASURE}", o, b, PEERS["hand"], f"≤ {BY_HAND_TARGET}× baseline",
                       o <= BY_HAND_TARGET * b, "s", o_r, b_r))  # fmt: skip
    target = f"≤ {WARM_TARGET_S} s and ≤ {WARM_VS_FORK:g}× baseline"
    if not samples.get("warm"):
        out.append(Row(AREA, f"{WARM}: {VISIBLE}", math.nan, None, PEERS["accelerate"], target,
                       False, error=missing.get("warm", "not measured")))  # fmt: skip
    elif not samples.get("accelerate"):
        w, w_r = summarize(samples["warm"])
        out.append(Row(AREA, f"{WARM}: {VISIBLE}", w, None, PEERS["accelerate"], target,
                       w <= WARM_TARGET_S, "s", w_r))  # fmt: skip
    else:
        (w, w_r), (b, b_r) = summarize(samples["warm"]), summarize(samples["accelerate"])
        out.append(Row(AREA, f"{WARM}: {VISIBLE}", w, b, PEERS["accelerate"], target,
                       w <= WARM_TARGET_S and w <= WARM_VS_FORK * b, "s", w_r, b_r))  # fmt: skip
    if samples.get("warm_ready") and samples.get("hand"):
        (o, o_r), (b, b_r) = summarize(samples["warm_ready"]), summarize(samples["hand"])
        out.append(Row(AREA, f"{WARM}: {READY_MEASURE}", o, b, PEERS["hand"], "n/a", None,
                       "s", o_r, b_r))  # fmt: skip
    return out


if __name__ == "__main__":
    from benchmarks.table import render_text

    print(render_text(run(int(sys.argv[1]) if len(sys.argv) > 1 else 3)))
