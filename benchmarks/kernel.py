"""Launch timings taken inside a real Jupyter kernel (helpers, no ``run``).

``Kernel`` starts an ipykernel through ``jupyter_client`` and runs cells in it, as a
notebook does. Inside it:

- ``time_distribute``: a ``%%distribute --strategy torch-ddp --replicas 2`` cell whose
  ranks print READY. The figure a user feels: from sending the cell to both READY
  lines having arrived in the cell's dashboard (the job API's ``watch`` stream that
  the dashboard folds; a 2 ms poller in the kernel notes when). Also "ranks ready":
  the supervisor's stamps of the READY lines, from the same start;
- ``time_accelerate``: ``accelerate.notebook_launcher(fn, num_processes=2)``, which
  forks the kernel; each rank notes when its gloo process group is up;
- ``time_ipyparallel``: ``ipp.Cluster(n=2)`` started and connected, then an
  ``init_process_group`` on each engine.

Every way ends with both ranks' process group initialised, so the figures compare.
"""

from __future__ import annotations

import json
import os
import queue
import time
from pathlib import Path
from typing import Any

from benchmarks.launchers import READY, free_port

ROOT = Path(__file__).resolve().parent.parent

SETUP_OURS = """\
%load_ext jupyter_ddl
import json, threading, time
_bench_magics = get_ipython().magics_manager.registry["DDLMagics"]
_bench_seen = set(_bench_magics.dashboards)

def _bench_watch(out, ranks, timeout=120.0):
    # Notes when every rank's READY line is in the new job's dashboard state.
    deadline = time.time() + timeout
    while time.time() < deadline:
        new = [d for n, d in list(_bench_magics.dashboards.items()) if n not in _bench_seen]
        if new:
            views = list(new[0].state.replicas.values())
            if sum(any(ln == "{ready}" for ln in list(v.lines)) for v in views) >= ranks:
                out["visible"], out["name"] = time.time(), new[0].name
                _bench_seen.add(new[0].name)
                return
        time.sleep(0.002)
"""

ARM_OURS = """\
_bench_out = {{}}
_bench_thread = threading.Thread(target=_bench_watch, args=(_bench_out, {ranks}), daemon=True)
_bench_thread.start()
"""

TIMED_OURS = """\
%%distribute --strategy torch-ddp --replicas {ranks}
print("{ready}", flush=True)
"""

COLLECT_OURS = """\
_bench_thread.join(130)
_m = _bench_magics.manager
_stamps = [ln.time for ln in _m.logs(_bench_out["name"]) if ln.text == "{ready}"]
_bench_out["ready"] = max(_stamps)
_m.wait(_bench_out["name"], timeout=60)
_m.delete(_bench_out["name"])
print("BENCH " + json.dumps(_bench_out))
"""

SETUP_PEERS = """\
import json, os, tempfile, time
import torch, torch.distributed as dist
from accelerate import notebook_launcher
import ipyparallel as ipp

def _bench_rank(directory):
    import os, time
    import torch.distributed as dist
    dist.init_process_group("gloo")
    with open(os.path.join(directory, f"ready-{dist.get_rank()}"), "w") as f:
        f.write(repr(time.time()))
    dist.barrier()
    dist.destroy_process_group()

def _bench_engine(rank, port):
    import time
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    return time.time()

def _bench_engine_done():
    import torch.distributed as dist
    dist.destroy_process_group()
"""

TIMED_ACCELERATE = """\
_d = tempfile.mkdtemp(prefix="bench-accelerate-")
_t0 = time.time()
notebook_launcher(_bench_rank, args=(_d,), num_processes=2, use_port="{port}")
_ready = max(float(open(os.path.join(_d, f)).read()) for f in os.listdir(_d))
print("BENCH " + json.dumps({{"t0": _t0, "ready": _ready, "ranks": len(os.listdir(_d))}}))
"""

TIMED_IPYPARALLEL = """\
_t0 = time.time()
_cluster = ipp.Cluster(n=2, cluster_id="bench-{port}", log_level=40)
_rc = _cluster.start_and_connect_sync()
_rc.wait_for_engines(2, timeout=120)
_ars = [_rc[i].apply_async(_bench_engine, i, {port}) for i in range(2)]
_ready = max(ar.get(timeout=120) for ar in _ars)
_rc[:].apply_sync(_bench_engine_done)
_rc.close()
_cluster.stop_cluster_sync()
print("BENCH " + json.dumps({{"t0": _t0, "ready": _ready}}))
"""


class Kernel:
    """A real ipykernel; ``run(code)`` executes one cell and returns its text output."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        from jupyter_client.manager import KernelManager

        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(env=env, cwd=str(cwd))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)

    def run(self, code: str, timeout: float = 180.0) -> tuple[float, str]:
        """(time the cell was sent, its stdout); raises RuntimeError on an error."""
        sent = time.time()
        msg_id = self.kc.execute(code)
        out: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"a kernel cell took over {timeout:.0f} s")
            try:
                msg = self.kc.get_iopub_msg(timeout=left)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream" and content.get("name") == "stdout":
                out.append(content["text"])
            elif kind == "error":
                raise RuntimeError(f"kernel: {content['ename']}: {content['evalue']}"[:300])
            elif kind == "status" and content.get("execution_state") == "idle":
                return sent, "".join(out)

    def close(self) -> None:
        try:
            self.kc.stop_channels()
        finally:
            self.km.shutdown_kernel(now=True)


def kernel_env(data_dir: Path) -> dict[str, str]:
    """The kernel finds this checkout, keeps jobs in ``data_dir``, shows text output."""
    (data_dir / "ipython").mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["JUPYTER_DDL_DATA_DIR"] = str(data_dir)
    env["JUPYTER_DDL_WIDGETS"] = "0"  # no front end: the text view, same event stream
    env["IPYTHONDIR"] = str(data_dir / "ipython")  # ipyparallel's profile stays private
    return env


def _bench(text: str) -> dict[str, Any]:
    for line in text.splitlines():
        if line.startswith("BENCH "):
            return dict(json.loads(line[6:]))
    raise RuntimeError(f"the kernel printed no result: {text.strip()[-200:]!r}")


class OursInKernel:
    """``%%distribute`` cells in one kernel (loaded once, like a user's notebook)."""

    def __init__(self, kernel: Kernel, ranks: int = 2) -> None:
        self.kernel, self.ranks = kernel, ranks
        kernel.run(SETUP_OURS.format(ready=READY))

    def time(self) -> tuple[float, float]:
        """(seconds to both READY lines in the dashboard, seconds to ranks ready)."""
        self.kernel.run(ARM_OURS.format(ranks=self.ranks))
        sent, _ = self.kernel.run(TIMED_OURS.format(ranks=self.ranks, ready=READY))
        got = _bench(self.kernel.run(COLLECT_OURS.format(ready=READY))[1])
        if "visible" not in got:
            raise RuntimeError("the READY lines never reached the dashboard")
        return got["visible"] - sent, got["ready"] - sent


class PeersInKernel:
    """accelerate and ipyparallel, both driven from one notebook kernel."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        kernel.run(SETUP_PEERS, timeout=300)

    def accelerate(self) -> float:
        got = _bench(self.kernel.run(TIMED_ACCELERATE.format(port=free_port()))[1])
        if got["ranks"] < 2:
            raise RuntimeError(f"accelerate: {got['ranks']} of 2 ranks got ready")
        return float(got["ready"] - got["t0"])

    def ipyparallel(self) -> float:
        got = _bench(self.kernel.run(TIMED_IPYPARALLEL.format(port=free_port()), timeout=300)[1])
        return float(got["ready"] - got["t0"])
