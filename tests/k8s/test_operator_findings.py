"""What the real operators, schedulers and kubelets do to our jobs, shown against the
API double, which behaves as they do (the sources are in each docstring and in
``docs/operator-contract.md``). Each test failed on the product before its fix."""

from __future__ import annotations

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.models import GangScheduling, JobSpec, JobState

from .apidouble import NAMESPACE
from .test_findings import RUN_CELL, final_state, logs, name, watch


@pytest.mark.parametrize("scheduler", ["volcano", "scheduler-plugins"])
def test_an_mpijob_gang_starts(backend, double, scheduler):
    """mpi-operator makes the launcher once every worker is Ready; Volcano's gang
    plugin and coscheduling's PreFilter place no member until ``minMember`` pods of
    the group exist. A gang that counted the launcher never formed."""
    double.catalog.crds.append(
        "PodGroup/v1beta1" if scheduler == "volcano" else "PodGroup/v1alpha1"
    )
    spec = JobSpec(name=name("hvg"), strategy="horovod", replicas={"Worker": 2}, command=RUN_CELL,
                   gang=GangScheduling(scheduler=scheduler))  # fmt: skip
    backend.submit(spec, build_bundle("print('gang ran', flush=True)\n"))
    events = watch(backend, spec.name, timeout=45)
    assert final_state(events) == JobState.SUCCEEDED, [str(e) for e in events][-5:]
    assert "gang ran" in logs(events)


def test_mpi_ranks_get_env_secret_env_and_the_runtime_variables(make_backend, double):
    """Ranks start on the workers through ssh in a fresh login environment; Open MPI
    hands remote ranks only ``OMPI_*`` and what ``-x`` names. ``--env``,
    ``--secret-env`` and our own variables must reach every rank, named by ``-x``
    with their values outside argv."""
    b = make_backend()
    b._environ = {"WANDB_API_KEY": "s3cr3t-value"}
    cell = (
        "import os, sys, hashlib\ne = os.environ\n"
        "key = hashlib.sha256(e.get('WANDB_API_KEY', '').encode()).hexdigest()[:8]\n"
        "sys.stdout.write(f\"rank {e.get('OMPI_COMM_WORLD_RANK')} {e.get('WANDB_PROJECT')} "
        "{e.get('JUPYTER_DDL_STRATEGY')} {key}\\n\")\n"
    )
    spec = JobSpec(name=name("mpienv"), strategy="horovod", replicas={"Worker": 2}, command=RUN_CELL,
                   env={"WANDB_PROJECT": "x"}, secret_env=["WANDB_API_KEY"])  # fmt: skip
    b.submit(spec, build_bundle(cell))
    launcher = double.store.get("kubeflow.org/v2beta1/mpijobs", NAMESPACE, spec.name)
    argv = launcher["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0][
        "command"
    ]
    assert "s3cr3t-value" not in " ".join(argv)
    events = watch(b, spec.name, timeout=60)
    import hashlib

    key = hashlib.sha256(b"s3cr3t-value").hexdigest()[:8]
    ranks = sorted(t for t in logs(events) if t.startswith("rank"))
    assert ranks == [f"rank {i} x horovod {key}" for i in range(2)], ranks
    assert final_state(events) == JobState.SUCCEEDED
