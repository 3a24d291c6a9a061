"""Horovod's MPIJob on the real tier, through `JobManager` as the notebook user:
mpi-operator v0.8.0 makes the workers (its default `/usr/sbin/sshd -De`, with the keys it
mounts) and, once they are Ready, the launcher, whose `mpirun` reaches them over real
SSH; every rank's lines come back in the cell, with the cell's `--env` and
`--secret-env` values forwarded by name. A worker whose image has no sshd ends the job
Failed with the runtime's words, and a notebook image without sshd is refused before
anything is created.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.core.placement import GangScheduling
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.models import JobSpec, JobState
from tests.cluster.test_distribute_real import lines, manager, run_cell  # noqa: F401
from tests.cluster.tier import ADMIN, MARKS, NAMESPACE, built, create, kubectl

pytestmark = MARKS

SECRET = "s3cret-only-in-the-notebook"
# the cell prints a digest of the secret, never the secret
MPI_CELL = """
import hashlib, os
from mpi4py import MPI
c = MPI.COMM_WORLD
total = c.allreduce(c.Get_rank() + 1)
seen = hashlib.sha256(os.environ.get('JDDL_TOKEN', '').encode()).hexdigest()[:12]
print(f"rank {c.Get_rank()} of {c.Get_size()} sum {total} A={os.environ.get('A')} token={seen}")
"""
# a notebook image as Kubeflow ships them: the tier's image stand-in has no sshd in it
NOTEBOOK_IMAGE = "kubeflownotebookswg/jupyter-scipy:v1.9.0"


def test_horovod_mpijob_runs_every_rank_over_ssh_with_env_and_secret_env(
    manager,  # noqa: F811
    monkeypatch,
):
    built("mpi-operator")
    monkeypatch.setenv("JDDL_TOKEN", SECRET)
    state, message, events = run_cell(
        manager,
        "horovod",
        {"Worker": 2},
        MPI_CELL,
        240,
        env={"A": "1"},
        secret_env=["JDDL_TOKEN"],
        image="mpioperator/openmpi:0.8.0",
    )
    got = lines(events)
    assert state is JobState.SUCCEEDED, (message, got)
    flat = [ln for replica in got.values() for ln in replica]
    digest = hashlib.sha256(SECRET.encode()).hexdigest()[:12]
    for rank in (0, 1):
        assert f"rank {rank} of 2 sum 3 A=1 token={digest}" in flat, got
    assert not any(SECRET in ln for ln in flat)


def test_a_worker_without_sshd_ends_the_job_failed_with_the_runtimes_words(manager):  # noqa: F811
    built("mpi-operator")
    state, message, events = run_cell(
        manager, "horovod", {"Worker": 2}, MPI_CELL, 120, image=NOTEBOOK_IMAGE
    )
    assert state is JobState.FAILED, (message, lines(events))
    assert "worker-" in message and "can never start" in message, message
    assert "StartError" in message and "/usr/sbin/sshd" in message, message


@pytest.fixture
def notebook_pod(tier, monkeypatch):
    """A Kubeflow notebook's pod on the tier, and this process as the notebook in it."""
    name = "nb-nosshd-0"
    got = create(
        "apiVersion: v1\nkind: Pod\n"
        f"metadata: {{name: {name}}}\n"
        "spec:\n  restartPolicy: Never\n  containers:\n"
        f"  - {{name: nb-nosshd, image: '{NOTEBOOK_IMAGE}', command: [sleep, '300']}}\n"
    )
    assert got.returncode == 0, got.stderr
    monkeypatch.setenv("NB_PREFIX", f"/notebook/{NAMESPACE}/nb-nosshd")
    monkeypatch.setenv("HOSTNAME", name)
    yield name
    kubectl("-n", NAMESPACE, "delete", "pod", name, "--wait=false", check=False)


def test_a_notebook_image_without_sshd_is_refused_before_anything_is_created(
    notebook_pod,
    manager,  # noqa: F811
):
    built("mpi-operator")
    spec = JobSpec(
        name="real-nosshd",
        strategy="horovod",
        replicas={"Worker": 2},
        backend="kubernetes",
        namespace=NAMESPACE,
    )
    with pytest.raises(ValidationError) as e:
        manager.submit(spec, build_bundle("print('never')\n"))
    text = str(e.value)
    assert len(text.splitlines()) == 1, text
    assert NOTEBOOK_IMAGE in text and "sshd" in text and "--image" in text, text
    left = kubectl(
        "-n", NAMESPACE, "get", "mpijobs,configmaps,secrets", "-o", "name", kubeconfig=ADMIN
    )
    assert "real-nosshd" not in left.stdout, left.stdout


def test_a_gang_mpijob_is_taken_by_the_real_operator_and_starts(manager):  # noqa: F811
    """`--gang` on an MPIJob: the gang counts the workers only and the launcher waits for
    Ready workers, so neither waits on the other. The real operator keeps what the
    product writes and starts the job. (No gang scheduler runs on the tier: the
    PodGroup is left to the operator, and the pods go to kube-scheduler.)"""
    built("mpi-operator")
    name = f"real-gang-{uuid.uuid4().hex[:6]}"
    spec = JobSpec(
        name=name,
        strategy="horovod",
        replicas={"Worker": 2},
        backend="kubernetes",
        namespace=NAMESPACE,
        image="mpioperator/openmpi:0.8.0",
        gang=GangScheduling(scheduler="volcano"),
        backend_options={"gang_podgroup": "operator"},
    )
    manager.submit(spec, build_bundle(MPI_CELL))
    try:
        got = kubectl("-n", NAMESPACE, "get", "mpijob", name, "-o", "json", kubeconfig=ADMIN)
        stored = json.loads(got.stdout)["spec"]
        assert stored["launcherCreationPolicy"] == "WaitForWorkersReady", stored
        assert stored["runPolicy"]["schedulingPolicy"]["minAvailable"] == 2, stored
        stop = threading.Event()
        timer = threading.Timer(180, stop.set)
        timer.start()
        try:
            events = list(manager.watch(name, stop=stop))
        finally:
            timer.cancel()
        final = [e.status for e in events if e.status is not None]
        assert final and final[-1].state is JobState.SUCCEEDED, (final[-1:], lines(events))
    finally:
        manager.delete(name)
