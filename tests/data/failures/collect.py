"""Regenerates the failure fixtures beside this file from real failing jobs on the local
backend: ``python tests/data/failures/collect.py [CASE ...]`` (a few minutes).

Each ``<case>.json`` holds what the root-cause classifier is given for every replica
(state, rank, failure time, exit, its last lines), with the machine's paths replaced
by ``<job>`` and ``<python>``, and the job's own message. tests/test_failures.py reads
them; nothing reads this script at test time.
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TAIL = 80  # lines kept per replica (the dashboard keeps 200)

TORCH_CRASH = """
import torch, torch.distributed as dist
print(f"rank {rank} starting", flush=True)
report(step=0, loss=1.0)
if rank == RANK:
    raise ValueError("boom")
dist.all_reduce(torch.ones(1))
print("not reached", flush=True)
"""

TORCH_KILLED = """
import os, time, torch, torch.distributed as dist
print(f"rank {rank} starting", flush=True)
for step in range(1000):
    dist.all_reduce(torch.ones(1000))
    if rank == 1 and step == 20:
        os.kill(os.getpid(), 9)  # what the kernel's OOM killer does
"""

TORCH_EXIT = """
import sys, torch, torch.distributed as dist
print(f"rank {rank}: starting", flush=True)
if rank == 2:
    print("rank 2: cannot read my data shard, giving up", flush=True)
    sys.exit(3)
dist.all_reduce(torch.ones(1))
"""

TORCH_LOOP = """
import torch, torch.distributed as dist
step = 0
while True:
    dist.all_reduce(torch.ones(1000))
    if step % 50 == 0:
        report(step=step, loss=1.0 / (step + 1))
    step += 1
"""

TF_CRASH = """
import tensorflow as tf
print(f"task {rank} starting", flush=True)
with strategy.scope():
    v = tf.Variable(1.0)
if rank == 1:
    raise ValueError("boom in the input pipeline")
strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("sum", v))
print("not reached", flush=True)
"""

MPI_CRASH = """
from mpi4py import MPI
comm = MPI.COMM_WORLD
print(f"rank {comm.rank} starting", flush=True)
if comm.rank == 1:
    raise ValueError("boom")
comm.allreduce(1)
print("not reached", flush=True)
"""

CASES = {
    # name: (strategy, replicas, code, restart policy, extra spec fields, cancel after s)
    "gloo-closed": ("torch-ddp", {"Master": 1, "Worker": 2}, TORCH_CRASH.replace("RANK", "2"), "Never", {}, None),
    "gloo-restarts": ("torch-ddp", {"Master": 1, "Worker": 1}, TORCH_CRASH.replace("RANK", "1"), None, {}, None),
    "gloo-killed": ("torch-ddp", {"Master": 1, "Worker": 1}, TORCH_KILLED, "Never", {}, None),
    "exit-no-traceback": ("torch-ddp", {"Master": 1, "Worker": 2}, TORCH_EXIT, "Never", {}, None),
    "torchrun-child": ("torch-ddp", {"Master": 1, "Worker": 1}, TORCH_CRASH.replace("RANK", "3"), "Never", {"nproc_per_node": 2}, None),
    "cancel-teardown": ("torch-ddp", {"Master": 1, "Worker": 3}, TORCH_LOOP, None, {}, 6.0),
    "tf-multi-worker": ("tf-multi-worker-mirrored", {"Worker": 2}, TF_CRASH, "Never", {}, None),
    "mpi-rank": ("horovod", {"Worker": 2}, MPI_CRASH, "Never", {}, None),
}  # fmt: skip


def run(case: str, root: Path) -> dict:
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.manager import JobManager
    from jupyter_ddl.models import JobSpec, RestartPolicy

    strategy, replicas, code, policy, extra, cancel_after = CASES[case]
    m = JobManager()
    spec = JobSpec(
        name=case, strategy=strategy, replicas=replicas,
        restart_policy=RestartPolicy(policy) if policy else None, **extra,
    )  # fmt: skip
    m.submit(spec, build_bundle(code))
    if cancel_after is not None:
        time.sleep(cancel_after)
        m.cancel(case)
    status = m.wait(case, timeout=300)
    jobdir = str(root / "jobs" / case)
    site = sysconfig.get_paths()["purelib"]

    def clean(text: str) -> str:
        return (
            text.replace(jobdir, "<job>").replace(site, "<python>").replace(sys.prefix, "<python>")
        )

    out = {"state": status.state.value, "message": clean(status.message or ""), "replicas": []}
    for r in status.replicas:
        lines = [ln.text for ln in m.logs(case, replica=r.id)]  # notes too, as dashboards see them
        out["replicas"].append(
            {
                "id": r.id, "state": r.state.value, "rank": r.rank, "ended": r.ended,
                "exit_code": r.exit_code, "signal": r.signal, "message": r.message,
                "restarts": r.restarts, "lines": [clean(t) for t in lines[-TAIL:]],
            }
        )  # fmt: skip
    return out


def run_again(case: str, root: Path) -> dict:
    from jupyter_ddl.manager import JobManager

    JobManager().delete(case)
    return run(case, root)


def _has_teardown_noise(data: dict) -> bool:
    marker = "jupyter-ddl: cancel requested"
    for r in data["replicas"]:
        lines = r["lines"]
        at = next((i for i, t in enumerate(lines) if t.startswith(marker)), len(lines))
        if any("Traceback" in t for t in lines[at:]):
            return True
    return False


def main(cases: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["JUPYTER_DDL_DATA_DIR"] = tmp
        for case in cases or list(CASES):
            for attempt in range(5):
                data = run(f"{case}", Path(tmp)) if attempt == 0 else run_again(case, Path(tmp))
                if case != "cancel-teardown" or _has_teardown_noise(data):
                    break  # stopping is fast: the peers' errors do not show every time
            (HERE / f"{case}.json").write_text(
                json.dumps(data, indent=1, ensure_ascii=False) + "\n"
            )
            print(case, data["state"], data["message"][:160])


if __name__ == "__main__":
    main(sys.argv[1:])
