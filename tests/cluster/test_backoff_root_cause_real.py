"""A job past its backoff limit keeps its root cause, refereed by the real tier.

training-operator v1.9 deletes every pod of a PyTorchJob past its ``backoffLimit``
before it marks the job Failed (``pkg/controller.v1/common/job.go`` ReconcileJobs:
DeletePodsAndServices, then the Failed condition). The watch must keep what it saw of
the replica that raised, its failed run and its lines, while its pod is stopped and
goes: the cell's failure names that replica and its exception.
``JDDL_ROOT_CAUSE_RUNS=5`` runs the scenario five times (a race is what it guards).
"""

from __future__ import annotations

import os
import threading
import uuid

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.core.spec import JobSpec
from jupyter_ddl.core.states import JobState
from jupyter_ddl.present.state import DashboardState
from tests.cluster.test_distribute_real import lines, manager  # noqa: F401
from tests.cluster.tier import MARKS, NAMESPACE, built

pytestmark = MARKS

CELL = (
    "import torch.distributed as dist\n"
    "print(f'rank {rank}: reading my data shard', flush=True)\n"
    "if rank == 1:\n"
    "    raise ValueError('data shard 1 is corrupt')\n"
    "dist.barrier()\n"
)
RUNS = int(os.environ.get("JDDL_ROOT_CAUSE_RUNS", "1"))


@pytest.mark.parametrize("attempt", range(RUNS))
def test_a_pytorchjob_past_backoff_limit_0_names_the_replica_that_raised(manager, attempt):  # noqa: F811
    built("training-operator")
    spec = JobSpec(name=f"bo0-{uuid.uuid4().hex[:6]}", strategy="torch-ddp",
                   replicas={"Master": 1, "Worker": 1}, backend="kubernetes",
                   namespace=NAMESPACE, backoff_limit=0)  # fmt: skip
    manager.submit(spec, build_bundle(CELL))
    stop = threading.Event()
    timer = threading.Timer(240, stop.set)
    timer.start()
    shown = DashboardState(spec.name)  # what the cell shows, and fails with
    events = []
    try:
        for e in manager.watch(spec.name, stop=stop):
            shown.apply(e)
            events.append(e)
    finally:
        timer.cancel()
        manager.delete(spec.name)
    final = [e.status for e in events if e.status is not None][-1]
    views = {v.id: (v.state, v.exit_code, v.restarts) for v in shown.replicas.values()}
    assert final.state is JobState.FAILED, (final.message, views, lines(events))
    assert "backoff limit" in (final.message or ""), final.message
    root = shown.diagnosis().root
    assert root is not None, (views, lines(events))
    assert root.replica == "worker-0", (root, views)
    assert "ValueError: data shard 1 is corrupt" in root.summary, (root, views)
    assert (final.message or "").startswith("worker-0 · rank 1 failed first: ValueError"), (
        final.message,
        views,
    )
    # the replica that raised failed with its own exit code, unless the job's end
    # stopped it before it exited (its process group's teardown still running)
    assert views["worker-0"][0] in ("Failed", "Terminated"), views
    assert views["worker-0"][0] == "Terminated" or views["worker-0"][1] == 1, views
