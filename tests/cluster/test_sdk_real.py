"""The Kubeflow SDKs against the real tier, and the product beside them.

The Training SDK v1 (``kubeflow-training``: a PyTorchJob, and a TFJob of two Workers
whose code prints the task of the ``TF_CONFIG`` the training operator wrote, each from
a function) and the Trainer SDK v2 (``kubeflow``: a TrainJob on the
``torch-distributed`` runtime, copied into the namespace as a TrainingRuntime:
Kubeflow's roles let a profile's user read those, not ClusterTrainingRuntimes, and the
SDK reads the runtime first) each run their own create, wait, logs and delete, as the
notebook user, in their own environment (``benchmarks.k8s_real_sdk``). The Trainer
SDK's ``list_jobs`` reads the runtime of every TrainJob in the namespace, so one job
left Terminating after its own runtime went fails it: the product deletes TrainJobs in
the background (``TrainJobKind.delete_propagation``). Then the product meets a job an SDK created, which
carries none of our labels or annotations: ``JobManager`` lists it, reads its status
and its lines, and cancels it, as ``%ddl list``, ``%ddl logs`` and ``%ddl cancel`` do.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.k8s_real import call_sdk, namespaced_runtime
from benchmarks.k8s_real_sdk import SDK_VENV
from jupyter_ddl.config import Config
from jupyter_ddl.manager import JobManager
from jupyter_ddl.models import JobState
from tests.cluster.tier import (
    ADMIN,
    EVERY_TRAINER,
    KUBECONFIG,
    MARKS,
    NAMESPACE,
    TRAINER,
    built,
    kubectl,
    wait_for,
)
from tests.support import require

pytestmark = MARKS

SDKS = [
    pytest.param("v1", "PyTorchJob", ("training-operator",), id="training-sdk-v1"),
    pytest.param("v1", "TFJob", ("training-operator",), id="training-sdk-v1-tfjob"),
    pytest.param(
        "v2",
        "TrainJob",
        (f"trainer-{TRAINER}", "jobset-controller"),
        id="trainer-sdk-v2",
        marks=EVERY_TRAINER,
    ),
]


def sdk(op: str, which: str, kind: str) -> dict[str, Any]:
    if not (SDK_VENV / "bin" / "python").exists():
        require._missing(f"the Kubeflow SDKs' environment {SDK_VENV}")
    if which == "v2":
        # the profile's own TrainingRuntime: its user cannot read ClusterTrainingRuntimes
        namespaced_runtime(ADMIN)
    return call_sdk(
        {
            "op": op,
            "sdk": which,
            "kind": kind,
            "kubeconfig": str(KUBECONFIG),
            "namespace": NAMESPACE,
        },
        timeout=400,
    )


@pytest.fixture
def manager(tier, monkeypatch) -> Iterator[JobManager]:
    monkeypatch.setenv("KUBECONFIG", str(KUBECONFIG))
    m = JobManager(config=Config(backend="kubernetes", namespace=NAMESPACE))
    yield m
    m.close()


@pytest.mark.parametrize(("which", "kind", "operators"), SDKS)
def test_the_sdk_creates_waits_reads_and_deletes_its_job(tier, which, kind, operators):
    for op in operators:
        built(op)
    got = sdk("cycle", which, kind)
    assert got["state"] in ("Succeeded", "Complete"), got
    assert any("first-line" in text for text in got["logs"].values()), got
    if kind == "TFJob":
        # each of the two Workers ran with the TF_CONFIG the training operator wrote
        tasks = sorted(ln for text in got["logs"].values() for ln in text.splitlines()
                       if ln.startswith("tf-task "))  # fmt: skip
        assert tasks == ["tf-task worker 0", "tf-task worker 1"], got
    assert got["gone"], got


@pytest.mark.parametrize(("which", "kind", "operators"), SDKS)
def test_the_product_lists_reads_and_cancels_a_job_an_sdk_created(manager, which, kind, operators):
    for op in operators:
        built(op)
    name = sdk("create", which, kind)["name"]
    try:
        listed = {j.name: j for j in manager.list(backend="kubernetes")}
        assert name in listed, sorted(listed)
        assert listed[name].namespace == NAMESPACE
        running = wait_for(
            f"{name} running", lambda: (s := manager.get(name)).state is JobState.RUNNING and s, 180
        )
        assert running.replicas, running
        lines = wait_for(
            f"{name}'s first line",
            lambda: [ln for ln in manager.logs(name) if "first-line" in ln.text],
            120,
        )
        assert lines[0].replica, lines
        assert manager.cancel(name).state is JobState.CANCELLED
        # cancelled stays cancelled, and its pods go
        wait_for(f"{name} stopped", lambda: not manager.get(name).ready, 120)
        assert manager.get(name).state is JobState.CANCELLED
    finally:
        kubectl("-n", NAMESPACE, "delete", kind.lower(), name, "--wait=false",
                kubeconfig=ADMIN, check=False)  # fmt: skip
