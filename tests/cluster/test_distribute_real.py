"""A cell run end to end on the real tier through `JobManager`, the API `%%distribute`
uses, as the notebook user: the product's manifests under the real operators, its pods
run by the node agent in their own network namespaces, ranks finding each other by the
names the operators give them, the code shipped in a ConfigMap and mounted read-only.
"""

from __future__ import annotations

import importlib.util
import threading
import uuid
from collections.abc import Iterator

import pytest

from jupyter_ddl.config import Config
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.manager import JobManager
from jupyter_ddl.models import JobEvent, JobSpec, JobState
from tests.cluster.tier import EVERY_TRAINER, KUBECONFIG, MARKS, NAMESPACE, built

pytestmark = MARKS


@pytest.fixture
def manager(tier, monkeypatch) -> Iterator[JobManager]:
    monkeypatch.setenv("KUBECONFIG", str(KUBECONFIG))
    m = JobManager(config=Config(backend="kubernetes", namespace=NAMESPACE))
    yield m
    m.close()


def run_cell(
    m: JobManager, strategy: str, replicas: dict[str, int], code: str, seconds: float, **kw
) -> tuple[JobState, str, list[JobEvent]]:
    """Submit the cell, follow its events as the cell would show them, clean up."""
    spec = JobSpec(
        name=f"real-{uuid.uuid4().hex[:6]}",
        strategy=strategy,
        replicas=replicas,
        backend="kubernetes",
        namespace=NAMESPACE,
        **kw,
    )
    m.submit(spec, build_bundle(code))
    stop = threading.Event()
    timer = threading.Timer(seconds, stop.set)
    timer.start()
    try:
        events = list(m.watch(spec.name, stop=stop))
        # the status the cell ends on: the watch's last (it saw the pods the operator
        # deleted as the job ended), else what the job reads as now
        final = [e.status for e in events if e.status is not None]
        status = final[-1] if final else m.get(spec.name)
        return status.state, status.message or "", events
    finally:
        timer.cancel()
        m.delete(spec.name)


def lines(events: list[JobEvent]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for e in events:
        if e.log is not None:
            out.setdefault(e.log.replica, []).append(e.log.text)
    return out


TORCH_CELL = """
import torch, torch.distributed as dist
t = torch.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(t)
print('rank', dist.get_rank(), 'of', dist.get_world_size(), 'sum', t.item())
"""


def test_torch_ddp_pytorchjob_runs_both_ranks_to_succeeded(manager):
    built("training-operator")
    state, message, events = run_cell(
        manager, "torch-ddp", {"Master": 1, "Worker": 1}, TORCH_CELL, 240
    )
    got = lines(events)
    assert state is JobState.SUCCEEDED, (message, got)
    assert "rank 0 of 2 sum 3.0" in got.get("master-0", []), got
    assert "rank 1 of 2 sum 3.0" in got.get("worker-0", []), got


def test_a_cell_that_raises_ends_failed_with_its_root_cause(manager):
    built("training-operator")
    cell = (
        "import torch.distributed as dist\n"
        "if dist.get_rank() == 1:\n"
        "    raise ValueError('rank one is broken')\n"
        "dist.barrier()\n"
    )
    state, message, events = run_cell(manager, "torch-ddp", {"Master": 1, "Worker": 1}, cell, 420)
    assert state is JobState.FAILED, (message, lines(events))
    assert "ValueError: rank one is broken" in lines(events).get("worker-0", [])
    waiting = [e.message or "" for e in events if e.kind.value == "waiting"]
    # the operator's real back-off: the kubelet restarted the crashing replica first
    assert any("CrashLoopBackOff" in w for w in waiting), waiting
    assert "failed first: ValueError: rank one is broken" in message, message


@pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is None,
    reason="TensorFlow is not installed in this environment (the pods run its interpreter)",
)
def test_tf_multi_worker_mirrored_tfjob_runs_two_workers(manager):
    built("training-operator")
    cell = (
        "import json, os\n"
        "import tensorflow as tf\n"
        "s = tf.distribute.MultiWorkerMirroredStrategy()\n"
        "v = s.run(lambda: tf.constant(1.0))\n"
        "total = s.reduce(tf.distribute.ReduceOp.SUM, v, axis=None)\n"
        "task = json.loads(os.environ['TF_CONFIG'])['task']['index']\n"
        "print('task', task, 'replicas', s.num_replicas_in_sync, 'sum', float(total))\n"
    )
    state, message, events = run_cell(manager, "tf-multi-worker-mirrored", {"Worker": 2}, cell, 400)
    got = lines(events)
    assert state is JobState.SUCCEEDED, (message, got)
    assert "task 0 replicas 2 sum 2.0" in got.get("worker-0", []), got
    assert "task 1 replicas 2 sum 2.0" in got.get("worker-1", []), got


@EVERY_TRAINER
def test_trainjob_torch_runs_two_nodes_on_trainer(manager):
    built("trainer-v2.3.0")
    built("jobset-controller")
    state, message, events = run_cell(
        manager, "torch-ddp", {"Node": 2}, TORCH_CELL, 300, target="TrainJob"
    )
    got = lines(events)
    assert state is JobState.SUCCEEDED, (message, got)
    flat = [ln for replica in got.values() for ln in replica]
    assert "rank 0 of 2 sum 3.0" in flat and "rank 1 of 2 sum 3.0" in flat, got
