"""Scenarios on both tiers (the ``cluster`` fixture): what the product does with a
PyTorchJob and a TFJob from submit to delete, as the notebook user, against the API
double and against the real control plane and training-operator. The same assertions
hold on both; where the real tier answered otherwise, the double was corrected.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.manifests import CODE_DIR
from jupyter_ddl.models import EventKind, JobEvent, JobSpec, JobState

RUN_CELL = ["python", "-u", f"{CODE_DIR}/cell.py"]  # the cell alone, no framework shim

TORCH_CELL = """
import torch, torch.distributed as dist
t = torch.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(t)
print('rank', dist.get_rank(), 'of', dist.get_world_size(), 'sum', t.item(), flush=True)
"""
# what the operator told each TF worker about itself and its peers, and that worker 1
# reaches worker 0 at the address TF_CONFIG gives it. Worker 0's end ends the TFJob, and
# the operator then deletes the pods still running (cleanPodPolicy Running) with their
# logs, on a real cluster too. So worker 0 ends a few seconds after worker 1 has printed
# and hung up: worker 1's pod has ended by then and stays, with its log.
TF_CONFIG_CELL = """
import json, os, socket, time
c = json.loads(os.environ['TF_CONFIG'])
me, peers = c['task']['index'], c['cluster']['worker']
host, port = peers[0].rsplit(':', 1)
line = f"task {c['task']['type']} {me} of {len(peers)}"
if me == 0:
    s = socket.create_server(('', int(port)))
    s.settimeout(120)
    peer = s.accept()[0]
    peer.settimeout(120)
    peer.recv(1)  # worker 1 has printed: it closes, or sends, only after its line
    peer.close()
    time.sleep(3)  # worker 1 ends meanwhile
    print(line, flush=True)
else:
    deadline = time.time() + 120
    while True:
        try:
            conn = socket.create_connection((host, int(port)), timeout=5)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)
    print(line, flush=True)
    conn.close()
"""
KINDS = {
    # strategy, replicas, the cell, its command (None: the strategy's own), each replica's line
    "pytorchjob": ("torch-ddp", {"Master": 1, "Worker": 1}, TORCH_CELL, None,
                   {"master-0": "rank 0 of 2 sum 3.0", "worker-0": "rank 1 of 2 sum 3.0"}),
    "tfjob": ("tf-multi-worker-mirrored", {"Worker": 2}, TF_CONFIG_CELL, RUN_CELL,
              {"worker-0": "task worker 0 of 2", "worker-1": "task worker 1 of 2"}),
}  # fmt: skip


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def follow(backend, job: str, seconds: float, until=None) -> list[JobEvent]:
    """The job's events as the cell shows them, until it ends, ``until(events)`` holds,
    or ``seconds`` pass."""
    stop = threading.Event()
    timer = threading.Timer(seconds, stop.set)
    timer.daemon = True
    timer.start()
    events: list[JobEvent] = []
    try:
        for ev in backend.watch(job, stop=stop):
            events.append(ev)
            if until is not None and until(events):
                break
    finally:
        timer.cancel()
    return events


def lines(events: list[JobEvent]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for e in events:
        if e.kind == EventKind.LOG:
            out.setdefault(e.log.replica, []).append(e.log.text)
    return out


def waiting(events: list[JobEvent]) -> list[str]:
    return [e.message or "" for e in events if e.kind == EventKind.WAITING]


def final_state(events: list[JobEvent]) -> JobState | None:
    states = [e.status.state for e in events if e.kind == EventKind.STATUS and e.status]
    return states[-1] if states else None


def gone(cluster, rid: str, job: str, seconds: float = 60) -> None:
    """Wait until nothing of ``rid`` named for ``job`` is left."""
    deadline = time.monotonic() + seconds
    while True:
        left = [o["metadata"]["name"] for o in cluster.objects(rid)
                if o["metadata"]["name"].startswith(job)]  # fmt: skip
        if not left:
            return
        assert time.monotonic() < deadline, f"{rid} left after {seconds} s: {left}"
        time.sleep(0.5)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_submit_follow_every_pod_to_succeeded_then_delete(cluster, kind):
    strategy, replicas, cell, command, expect = KINDS[kind]
    backend = cluster.backend()
    spec = JobSpec(name=name(kind[:2]), strategy=strategy, replicas=replicas, command=command)
    backend.submit(spec, build_bundle(cell))
    events = follow(backend, spec.name, 240)
    got = lines(events)
    assert final_state(events) is JobState.SUCCEEDED, (waiting(events), got)
    # every pod's line, once each (no follow repeated or dropped one)
    for replica, line in expect.items():
        assert got.get(replica, []).count(line) == 1, got
    backend.delete(spec.name)
    gone(cluster, f"kubeflow.org/v1/{kind}s", spec.name)
    gone(cluster, "core/v1/pods", spec.name)
    gone(cluster, "core/v1/configmaps", spec.name)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_cancel_while_every_pod_runs_then_delete(cluster, kind):
    strategy, replicas, _, _, expect = KINDS[kind]
    backend = cluster.backend()
    cell = "import os, time\nprint('up', os.environ.get('HOSTNAME', ''), flush=True)\ntime.sleep(300)\n"
    spec = JobSpec(name=name(kind[:2]), strategy=strategy, replicas=replicas, command=RUN_CELL)
    backend.submit(spec, build_bundle(cell))
    events = follow(backend, spec.name, 120, until=lambda evs: set(lines(evs)) >= set(expect))
    assert set(lines(events)) >= set(expect), (waiting(events), lines(events))
    assert backend.cancel(spec.name).state is JobState.CANCELLED
    # cancelled: the operator removes the pods, the job object stays for its record
    gone(cluster, "core/v1/pods", spec.name)
    assert backend.get(spec.name).state is JobState.CANCELLED
    backend.delete(spec.name)
    gone(cluster, f"kubeflow.org/v1/{kind}s", spec.name)
    gone(cluster, "core/v1/configmaps", spec.name)
