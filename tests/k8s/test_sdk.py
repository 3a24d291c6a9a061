"""Third-party clients as referees: the Kubeflow Training SDK v1 (``kubeflow-training``,
``TrainingClient``) and the Trainer v2 SDK (``kubeflow``, ``TrainerClient``) run
against the API double exactly as against a cluster: create, get, wait, logs, delete.
A double these SDKs cannot use is wrong whatever the product thinks of it. Then the
product reads, follows, cancels and deletes jobs the SDKs created.

Versions: ``kubeflow`` 0.4.0 is the newest Trainer SDK that accepts ``kubernetes>=36``
(0.4.1+ pin ``kubernetes<36``) and works with it, so it runs in the test process
(pyproject's test extra). No Training SDK v1 does: 1.9.4 pins ``kubernetes<36`` and
1.9.3, unpinned, passes model objects that the pydantic-based client 36+ refuses. So
SDK1 (1.9.4, the release operator-contract.md cites) runs from ``sdk1_driver.py`` in a
venv this module makes once from PyPI wheels (``sdk1_python``).

The training functions below are shipped by the SDKs as source
(``inspect.getsource``), so each is self-contained.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from jupyter_ddl.models import EventKind, JobState, ReplicaState
from tests.support.require import _missing as require_missing
from tests.support.require import module

from .apidouble import NAMESPACE

PYTORCHJOBS = "kubeflow.org/v1/pytorchjobs"
TFJOBS = "kubeflow.org/v1/tfjobs"
TRAINJOBS = "trainer.kubeflow.org/v1alpha1/trainjobs"


def sdk_all_reduce():
    import os

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    t = torch.tensor([float(os.environ["RANK"]) + 1.0])
    dist.all_reduce(t)
    print(
        f"sdk rank={dist.get_rank()} world={dist.get_world_size()} sum={t.item():.0f}", flush=True
    )
    dist.destroy_process_group()


def sdk_slow():
    import time

    print("sdk working", flush=True)
    time.sleep(60)


@pytest.fixture
def global_kube_config():
    """The SDKs load the kubeconfig into the ``kubernetes`` module's global default
    configuration; put the previous one back afterwards."""
    from kubernetes import client

    saved = client.Configuration.get_default_copy()
    yield
    client.Configuration.set_default(saved)


def until(fn, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = fn()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError("timed out")


def follow_then_cancel(backend, double, job: str, line: str, rid: str, selector: str) -> None:
    """The product lists a job it did not create, follows it until ``line``, cancels
    and deletes it."""
    assert job in [j.name for j in backend.list()]
    assert job not in [j.name for j in backend.list(notebook="some.ipynb")]
    stop = threading.Event()
    timer = threading.Timer(60, stop.set)
    timer.start()
    try:
        for ev in backend.watch(job, stop=stop):
            if ev.kind == EventKind.LOG and ev.log.text == line:
                assert ev.replica == rid
                break
    finally:
        timer.cancel()
    assert backend.cancel(job).state == JobState.CANCELLED
    until(lambda: not double.store.list("core/v1/pods", NAMESPACE, selector)[0])
    assert all(r.state == ReplicaState.TERMINATED for r in backend.get(job).replicas)
    backend.delete(job)
    assert [j.name for j in backend.list() if j.name == job] == []


SDK1 = ("kubeflow-training==1.9.4", "kubernetes==35.0.0")


@pytest.fixture(scope="session")
def sdk1_python() -> str:
    """An interpreter with the Training SDK v1 and the ``kubernetes`` it needs, in a venv
    of its own (made once from PyPI wheels, then reused from the user cache)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    venv = base / "jupyter-ddl-tests" / ("sdk1-" + "-".join(p.replace("==", "") for p in SDK1))
    python = venv / "bin" / "python"
    if python.exists():
        return str(python)
    tmp = Path(tempfile.mkdtemp(prefix="sdk1-", dir=base))
    try:
        subprocess.run([sys.executable, "-m", "venv", str(tmp)], check=True, capture_output=True)
        subprocess.run([str(tmp / "bin" / "python"), "-m", "pip", "install", "--quiet",
                        "--only-binary=:all:", *SDK1], check=True, capture_output=True, timeout=600)  # fmt: skip
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        shutil.rmtree(tmp, ignore_errors=True)
        out = getattr(e, "stderr", b"") or b""
        require_missing(f"a venv with {' '.join(SDK1)} ({out.decode(errors='replace')[-200:]})")
    venv.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp.rename(venv)  # atomic: a parallel run either wins or reuses ours
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return str(python)


def sdk1(python: str, kubeconfig, command: str, name: str, kind: str = "PyTorchJob") -> dict:
    driver = Path(__file__).with_name("sdk1_driver.py")
    out = subprocess.run([python, str(driver), str(kubeconfig), NAMESPACE, command, name, kind],
                         capture_output=True, text=True, timeout=180)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_training_sdk_v1_and_the_product_on_its_jobs(kubeconfig, double, backend, sdk1_python):
    """SDK1 builds a PyTorchJob (Master 1 + Worker n-1, container ``pytorch``, the
    function in a bash heredoc run by ``torchrun``), polls conditions, reads logs by the
    operator's labels and deletes it; the double's operator wires the real rendezvous."""
    module("torch")
    name = f"sdk1-{uuid.uuid4().hex[:6]}"
    got = sdk1(sdk1_python, kubeconfig, "run", name)
    assert got["succeeded"] and got["master_succeeded"] == 1
    assert sorted(got["logs"]) == [f"{name}-master-0", f"{name}-worker-0"]
    assert "sdk rank=0 world=2 sum=3" in got["logs"][f"{name}-master-0"]
    assert "sdk rank=1 world=2 sum=3" in got["logs"][f"{name}-worker-0"]
    mine = backend.get(name)  # the product reads a job it did not create
    assert mine.state == JobState.SUCCEEDED
    assert [r.id for r in mine.replicas] == ["master-0", "worker-0"]
    assert any("sdk rank=0" in ln.text for ln in backend.logs(name, replica="master-0"))
    sdk1(sdk1_python, kubeconfig, "delete", name)
    until(lambda: double.store.get(PYTORCHJOBS, NAMESPACE, name) is None)

    slow = f"sdk1-{uuid.uuid4().hex[:6]}"
    assert sdk1(sdk1_python, kubeconfig, "start-slow", slow)["running"]
    follow_then_cancel(backend, double, slow, "sdk working", "master-0",
                       f"training.kubeflow.org/job-name={slow}")  # fmt: skip


@pytest.mark.slow
def test_training_sdk_v1_tfjob_and_the_product_on_its_jobs(
    kubeconfig, double, backend, sdk1_python
):
    """SDK1 builds a TFJob of two Workers (container ``tensorflow``, the function run by
    ``python -u``); the double's operator gives each its ``TF_CONFIG``; the product reads
    the job it did not create, then follows and cancels a slow one."""
    name = f"sdk1-{uuid.uuid4().hex[:6]}"
    got = sdk1(sdk1_python, kubeconfig, "run", name, "TFJob")
    assert got["succeeded"], got
    assert sorted(got["logs"]) == [f"{name}-worker-0", f"{name}-worker-1"], got
    for i in (0, 1):
        assert f"sdk tf-task worker {i}" in got["logs"][f"{name}-worker-{i}"], got
    mine = backend.get(name)
    assert mine.state == JobState.SUCCEEDED
    assert [r.id for r in mine.replicas] == ["worker-0", "worker-1"]
    assert any("sdk tf-task worker 1" in ln.text for ln in backend.logs(name, replica="worker-1"))
    sdk1(sdk1_python, kubeconfig, "delete", name, "TFJob")
    until(lambda: double.store.get(TFJOBS, NAMESPACE, name) is None)

    slow = f"sdk1-{uuid.uuid4().hex[:6]}"
    assert sdk1(sdk1_python, kubeconfig, "start-slow", slow, "TFJob")["running"]
    follow_then_cancel(backend, double, slow, "sdk working", "worker-0",
                       f"training.kubeflow.org/job-name={slow}")  # fmt: skip


@pytest.mark.slow
def test_trainer_sdk_v2_and_the_product_on_its_jobs(
    kubeconfig, double, backend, global_kube_config
):
    """SDK2 lists the ClusterTrainingRuntimes (it refuses one without the
    ``trainer.kubeflow.org/framework`` label), builds a TrainJob from a function
    (``torchrun`` in ``trainer.command``), derives Running/Complete from conditions and
    the JobSet-labelled pods, reads node-0's log and deletes the TrainJob."""
    module("torch")
    module("kubeflow.trainer")
    from kubeflow.common.types import KubernetesBackendConfig
    from kubeflow.trainer import CustomTrainer, TrainerClient

    tc = TrainerClient(KubernetesBackendConfig(namespace=NAMESPACE, config_file=str(kubeconfig)))
    runtimes = {r.name: r for r in tc.list_runtimes()}
    assert {"torch-distributed", "deepspeed-distributed"} <= set(runtimes)
    name = tc.train(
        runtime=runtimes["torch-distributed"],
        trainer=CustomTrainer(func=sdk_all_reduce, num_nodes=2),
    )
    job = tc.wait_for_job_status(name, timeout=120, polling_interval=1)
    assert job.status == "Complete" and sorted(s.name for s in job.steps) == ["node-0", "node-1"]
    lines = list(tc.get_job_logs(name))
    assert "sdk rank=0 world=2 sum=3" in lines, lines
    mine = backend.get(name)
    assert mine.state == JobState.SUCCEEDED and [r.id for r in mine.replicas] == [
        "node-0",
        "node-1",
    ]
    tc.delete_job(name)
    until(lambda: double.store.get(TRAINJOBS, NAMESPACE, name) is None)

    slow = tc.train(
        runtime=runtimes["torch-distributed"], trainer=CustomTrainer(func=sdk_slow, num_nodes=1)
    )
    tc.wait_for_job_status(slow, status={"Running"}, timeout=60, polling_interval=1)
    follow_then_cancel(backend, double, slow, "sdk working", "node-0",
                       f"jobset.sigs.k8s.io/jobset-name={slow}")  # fmt: skip
