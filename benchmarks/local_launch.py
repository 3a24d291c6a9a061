"""Local launch: a 2-rank gloo DDP rendezvous, ours beside every other way to start it.

Each way ends with both ranks' process group initialised; all are measured in the
same run, interleaved (the order rotates per repeat) so machine noise hits all:

- **ours**, the figure a user feels: a ``%%distribute --strategy torch-ddp --replicas 2``
  cell sent to a real kernel, until both ranks' READY lines are in the cell's
  dashboard (the job API's watch stream); and, secondary, until the ranks were ready
  (the supervisor's stamps of those lines). See ``kernel.py``;
- ``accelerate.notebook_launcher(fn, num_processes=2)`` in a kernel (it forks it);
- ipyparallel: ``ipp.Cluster(n=2)`` started from a kernel, then an init on each engine;
- the Kubeflow Trainer SDK's ``LocalProcessBackend`` (a venv and a pip install per job;
  see ``trainer_sdk.py``: the SDK runs from a venv of its own; once per run, it takes
  tens of seconds);
- ``torchrun --nproc-per-node 2`` and the two processes started by hand, from a
  terminal (``launchers.py``).

accelerate and ipyparallel come with ``pip install -e '.[bench]'``; a peer that cannot
run is a failed row that says why. The "warm" row is a slot for replica interpreters kept warm
per user (not built yet): its targets are ≤ 0.25 s and ≤ 10× accelerate's fork.

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

if TYPE_CHECKING:
    from benchmarks.kernel import Kernel

AREA = "local launch, 2-rank gloo rendezvous"
VISIBLE = "cell to both ranks' lines in the notebook's event stream"
READY_MEASURE = "cell to both ranks ready (supervisor's stamps)"
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
        self._kernels: list[Kernel] = []
        self.ours = OursInKernel(self._kernel())
        self.peers: PeersInKernel | None = None
        self.missing: dict[str, str] = {}
        try:
            self.peers = PeersInKernel(self._kernel())
        except RuntimeError as e:  # accelerate or ipyparallel not installed
            self.missing["accelerate"] = self.missing["ipyparallel"] = str(e)
        self.ready: list[float] = []

    def _kernel(self) -> Kernel:
        from benchmarks.kernel import Kernel

        k = Kernel(self._env, self.tmp)
        self._kernels.append(k)
        return k

    def visible(self) -> float:
        shown, ready = self.ours.time()
        self.ready.append(ready)
        return shown

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


def run(repeats: int = 5, quick: bool = False, budget_s: float | None = None) -> list[Row]:
    """Medians of every way; the Trainer SDK once (it installs torch per job)."""
    t0 = time.monotonic()
    repeats = 1 if quick else max(1, repeats)
    samples: dict[str, list[float]] = {k: [] for k in ("visible", *PEERS)}
    with tempfile.TemporaryDirectory(prefix="ddl-bench-launch-") as tmp:
        ways = Ways(Path(tmp), quick)
        try:
            ways.visible()  # first use in a kernel imports the local backend: not timed
            ways.ready.clear()
            if ways.peers is not None:
                ways.accelerate()
            order: list[tuple[str, Callable[[], float]]] = [
                ("visible", ways.visible),
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
            samples["ready"] = ways.ready
        finally:
            ways.close()
    return rows(samples, ways.missing)


def rows(samples: dict[str, list[float]], missing: dict[str, str]) -> list[Row]:
    vis, vis_r = summarize(samples["visible"])
    out = []
    for key, name in PEERS.items():
        if key in missing or not samples.get(key):
            out.append(Row(AREA, f"{VISIBLE} vs {key}", math.nan, None, name, "", False,
                           error=missing.get(key, "not measured")))  # fmt: skip
            continue
        b, b_r = summarize(samples[key])
        target, passed = "n/a", None
        if key == "hand":
            target, passed = f"≤ {BY_HAND_TARGET}× baseline", vis <= BY_HAND_TARGET * b
        elif key == "torchrun":
            target = f"≤ {TORCHRUN_TARGET}× baseline (today {TORCHRUN_TODAY}×)"
            passed = vis <= TORCHRUN_TARGET * b
        out.append(Row(AREA, VISIBLE, vis, b, name, target, passed, "s", vis_r, b_r))
    if samples.get("ready") and samples.get("hand"):
        (o, o_r), (b, b_r) = summarize(samples["ready"]), summarize(samples["hand"])
        out.append(Row(AREA, READY_MEASURE, o, b, PEERS["hand"], f"≤ {BY_HAND_TARGET}× baseline",
                       o <= BY_HAND_TARGET * b, "s", o_r, b_r))  # fmt: skip
    if samples.get("accelerate"):
        b, b_r = summarize(samples["accelerate"])
        out.append(Row(AREA, f"warm replica interpreters: {VISIBLE}", math.nan, b,
                       PEERS["accelerate"], f"≤ {WARM_TARGET_S} s and ≤ {WARM_VS_FORK:g}× baseline",
                       None, "s", None, b_r, pending="not built yet"))  # fmt: skip
    return out


if __name__ == "__main__":
    from benchmarks.table import render_text

    print(render_text(run(int(sys.argv[1]) if len(sys.argv) > 1 else 3)))
