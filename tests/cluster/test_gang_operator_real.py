"""Gang scheduling where the operators make the PodGroups: training-operator v1.9 started
with ``--gang-scheduler-name`` and mpi-operator v0.8 with ``--gang-scheduling``, both
naming the tier's Coscheduling scheduler, and the product's ``gang_podgroup`` option set
to ``"operator"`` (it writes only ``runPolicy.schedulingPolicy``). The notebook user has
only kubeflow-edit here, no rights on PodGroups: in this mode it needs none.

Runs where the tier was brought up with ``CLUSTER_OPERATOR_GANG`` (``scripts/test``'s
second tier stage); the operators' flags are fixed when they start.
"""

from __future__ import annotations

import json
import os
import uuid

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.core.placement import GangScheduling
from jupyter_ddl.manager import JobManager
from jupyter_ddl.models import JobSpec, JobState
from tests.cluster.test_distribute_real import TORCH_CELL, lines, manager  # noqa: F401
from tests.cluster.test_gang_real import SCHEDULER, follow, scheduled_by
from tests.cluster.test_mpi_real import MPI_CELL
from tests.cluster.tier import ADMIN, MARKS, NAMESPACE, built, kubectl, wait_for

OPERATOR_GANG = os.environ.get("CLUSTER_OPERATOR_GANG", "")
pytestmark = [
    *MARKS,
    pytest.mark.operator_gang,
    pytest.mark.skipif(
        OPERATOR_GANG != SCHEDULER,
        reason="the operators run without their gang flags; CLUSTER_OPERATOR_GANG="
        f"{SCHEDULER} starts them with them (scripts/test's second tier stage)",
    ),
]


def submit(m: JobManager, cell: str, **kw) -> str:  # type: ignore[no-untyped-def]
    name = f"opgang-{uuid.uuid4().hex[:6]}"
    spec = JobSpec(
        name=name,
        backend="kubernetes",
        namespace=NAMESPACE,
        gang=GangScheduling(scheduler="scheduler-plugins"),
        backend_options={"gang_podgroup": "operator"},
        **kw,
    )
    m.submit(spec, build_bundle(cell))
    return name


def operators_podgroup(name: str, kind: str) -> dict:
    """The PodGroup the operator made for the job, read while the job runs (an operator
    deletes it when the job ends)."""
    pg = wait_for(
        "the operator's PodGroup",
        lambda: json.loads(
            kubectl("-n", NAMESPACE, "get", "podgroups.scheduling.x-k8s.io", name, "-o", "json",
                    kubeconfig=ADMIN, check=False).stdout or "null"
        ),
        60,
    )  # fmt: skip
    owners = pg["metadata"].get("ownerReferences") or []
    assert [(o["kind"], o["name"]) for o in owners] == [(kind, name)], owners
    assert (pg["metadata"].get("labels") or {}).get("jupyter-ddl.io/managed") is None, pg
    return pg


def test_a_pytorchjob_gang_made_by_the_operator_runs_to_succeeded(manager):  # noqa: F811
    built("training-operator")
    built("scheduler-plugins")
    name = submit(manager, TORCH_CELL, strategy="torch-ddp", replicas={"Master": 1, "Worker": 1})
    try:
        pg = operators_podgroup(name, "PyTorchJob")
        assert pg["spec"]["minMember"] == 2, pg
        status, events = follow(manager, name, 240)
        got = lines(events)
        assert status.state is JobState.SUCCEEDED, (status.message, got)
        assert any("rank 0 of 2 sum 3.0" in ln for r in got.values() for ln in r), got
        assert scheduled_by(name) == {SCHEDULER}, scheduled_by(name)
    finally:
        manager.delete(name)


def test_an_mpijob_gang_made_by_the_operator_counts_the_workers_and_starts(manager):  # noqa: F811
    """mpi-operator's own PodGroup takes schedulingPolicy.minAvailable (the workers)
    where it is set, workers + 1 otherwise, which would wait forever for a launcher
    made only once the workers are Ready."""
    built("mpi-operator")
    built("scheduler-plugins")
    name = submit(
        manager,
        MPI_CELL,
        strategy="horovod",
        replicas={"Worker": 2},
        image="mpioperator/openmpi:0.8.0",
    )
    try:
        pg = operators_podgroup(name, "MPIJob")
        assert pg["spec"]["minMember"] == 2, pg  # the workers, not workers + 1
        status, events = follow(manager, name, 240)
        got = lines(events)
        assert status.state is JobState.SUCCEEDED, (status.message, got)
        flat = [ln for r in got.values() for ln in r]
        for rank in (0, 1):
            assert any(f"rank {rank} of 2 sum 3" in ln for ln in flat), flat
        assert scheduled_by(name) == {SCHEDULER}, scheduled_by(name)
    finally:
        manager.delete(name)
