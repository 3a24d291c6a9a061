"""A job past its backoff limit keeps its root cause (the API double; the real tier
referees the same scenario in tests/cluster/test_backoff_root_cause_real.py).

training-operator v1.9 past a job's ``backoffLimit`` deletes every pod first, then
marks the job Failed (``pkg/controller.v1/common/job.go`` ReconcileJobs). A replica
that raised and was about to be restarted is then deleted showing the run that failed
as its current state, not as ``lastState``; it must still read as the replica that
failed, with its exit code, and lead the failure.
"""

from __future__ import annotations

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.models import EventKind, JobSpec, JobState, ReplicaState, RestartPolicy
from jupyter_ddl.present.state import DashboardState
from tests.support.require import module

from .apidouble import NAMESPACE
from .test_findings import logs, name, watch

PODS = "core/v1/pods"
JOBS = "kubeflow.org/v1/pytorchjobs"
CELL = (
    "import torch.distributed as dist\n"
    "print(f'rank {rank}: reading my data shard', flush=True)\n"
    "if rank == 1:\n"
    "    raise ValueError('data shard 1 is corrupt')\n"
    "dist.barrier()\n"
)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("policy", [RestartPolicy.ON_FAILURE, RestartPolicy.EXIT_CODE])
def test_a_replica_that_raised_leads_when_the_pods_go_before_the_job_fails(
    make_backend, double, policy
):
    module("torch")
    # the replica that raised waits to be restarted (under OnFailure) while its peer,
    # which lost it in the barrier, restarts at once and takes the job past the limit
    double.scenario.restart_after["worker-0"] = 30.0
    b = make_backend()
    spec = JobSpec(name=name("bo0"), strategy="torch-ddp", replicas={"Master": 1, "Worker": 1},
                   dist_backend="gloo", backoff_limit=0, restart_policy=policy)  # fmt: skip
    b.submit(spec, build_bundle(CELL))
    events = watch(b, spec.name, timeout=90)
    shown = DashboardState(spec.name)
    for e in events:
        shown.apply(e)
    final = [e.status for e in events if e.kind == EventKind.STATUS][-1]
    views = {v.id: (v.state, v.exit_code, v.restarts) for v in shown.replicas.values()}
    assert final.state == JobState.FAILED, (logs(events)[-8:], views)
    assert "reached the specified backoff limit" in final.message, final.message
    # the operator's order: every pod deleted before the Failed condition was written
    with double.store.cond:
        history = list(double.store.history)
    failed_at = next(i for i, (_, _, rid, o) in enumerate(history) if rid == JOBS and any(
        c["type"] == "Failed" for c in (o.get("status") or {}).get("conditions") or []))  # fmt: skip
    deleted = [i for i, (_, kind, rid, o) in enumerate(history) if rid == PODS
               and (kind == "DELETED" or o["metadata"].get("deletionTimestamp"))]  # fmt: skip
    assert deleted and min(deleted) < failed_at, (deleted[:3], failed_at)
    assert double.store.list(PODS, NAMESPACE)[0] == []
    root = shown.diagnosis().root
    assert root is not None and root.replica == "worker-0", (root, views)
    assert "ValueError: data shard 1 is corrupt" in root.summary, root
    assert final.message.startswith("worker-0 · rank 1 failed first: ValueError"), final.message
    worker = next(r for r in final.replicas if r.id == "worker-0")
    if policy == RestartPolicy.ON_FAILURE:  # its failed run was seen: it failed, exit 1
        assert (worker.state, worker.exit_code) == (ReplicaState.FAILED, 1), views
        assert views["worker-0"][:2] == ("Failed", 1), views
    else:  # its pod (restartPolicy Never) may be stopped in its teardown, before it exits
        assert (worker.state, worker.exit_code) in ((ReplicaState.FAILED, 1), (ReplicaState.TERMINATED, None)), views  # fmt: skip
