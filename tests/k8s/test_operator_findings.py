"""What the real operators, schedulers and kubelets do to our jobs, shown against the
API double, which behaves as they do (the sources are in each docstring and in
``docs/operator-contract.md``). Each test failed on the product before its fix."""

from __future__ import annotations

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.models import GangScheduling, JobSpec, JobState

from .test_findings import RUN_CELL, final_state, logs, name, watch


@pytest.mark.parametrize("scheduler", ["volcano", "scheduler-plugins"])
def test_an_mpijob_gang_starts(backend, double, scheduler):
    """mpi-operator makes the launcher once every worker is Ready; Volcano's gang
    plugin and coscheduling's PreFilter place no member until ``minMember`` pods of
    the group exist. A gang that counted the launcher never formed."""
    double.catalog.crds.append("PodGroup/v1beta1" if scheduler == "volcano" else "PodGroup/v1alpha1")
    spec = JobSpec(name=name("hvg"), strategy="horovod", replicas={"Worker": 2}, command=RUN_CELL,
                   gang=GangScheduling(scheduler=scheduler))  # fmt: skip
    backend.submit(spec, build_bundle("print('gang ran', flush=True)\n"))
    events = watch(backend, spec.name, timeout=45)
    assert final_state(events) == JobState.SUCCEEDED, [str(e) for e in events][-5:]
    assert "gang ran" in logs(events)
