"""Gang scheduling on the real tier with scheduler-plugins' Coscheduling plugin (the
tier's second scheduler, `scheduler-plugins-scheduler`), through `JobManager` as the
notebook user: a `--gang` PyTorchJob and a `--gang` MPIJob run to Succeeded (the MPIJob's
gang counts its workers, whose readiness the launcher waits for), and a gang that cannot
fit waits with the scheduler's reason in its status while none of its pods is placed,
and is removed whole when cancelled. (Volcano is not on the tier: its Go module is not
served by the module proxy.)
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.core.placement import GangScheduling, Resources
from jupyter_ddl.manager import JobManager
from jupyter_ddl.models import JobSpec, JobState
from tests.cluster.test_distribute_real import TORCH_CELL, lines, manager  # noqa: F401
from tests.cluster.test_mpi_real import MPI_CELL
from tests.cluster.tier import ADMIN, MARKS, NAMESPACE, built, kubectl

pytestmark = MARKS

GANG = GangScheduling(scheduler="scheduler-plugins")
SCHEDULER = "scheduler-plugins-scheduler"
# Coscheduling's PreFilter words for a gang whose summed requests no node has free
SCHEDULER_SAYS = "resource gap"
# what a platform that runs scheduler-plugins grants its users besides kubeflow-edit (patch:
# the product makes the PodGroup owned by the job, so deleting the job deletes it)
PODGROUP_ROLE = f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: gang-podgroups, namespace: {NAMESPACE}}}
rules:
- apiGroups: [scheduling.x-k8s.io]
  resources: [podgroups]
  verbs: [get, list, watch, create, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: gang-podgroups, namespace: {NAMESPACE}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: gang-podgroups}}
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: notebook}}
"""


@pytest.fixture
def gang(manager) -> Iterator[JobManager]:  # noqa: F811
    built("scheduler-plugins")
    got = subprocess.run(
        ["kubectl", "--kubeconfig", str(ADMIN), "apply", "-f", "-"],
        input=PODGROUP_ROLE, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    yield manager
    kubectl(
        "-n",
        NAMESPACE,
        "delete",
        "role,rolebinding",
        "gang-podgroups",
        kubeconfig=ADMIN,
        check=False,
    )


def admin_json(*args: str) -> dict:
    got = kubectl("-n", NAMESPACE, *args, "-o", "json", kubeconfig=ADMIN)
    return json.loads(got.stdout)


def job_pods(name: str) -> list[dict]:
    pods = admin_json("get", "pods")["items"]
    return [p for p in pods if p["metadata"]["name"].startswith(f"{name}-")]


def scheduled_by(name: str) -> set[str]:
    """The schedulers that placed the job's pods, from their Scheduled events."""
    events = admin_json("get", "events", "--field-selector", "reason=Scheduled")["items"]
    return {
        e.get("reportingComponent") or e.get("source", {}).get("component", "")
        for e in events
        if e["involvedObject"]["name"].startswith(f"{name}-")
    }


def follow(m: JobManager, name: str, seconds: float):  # type: ignore[no-untyped-def]
    stop = threading.Event()
    timer = threading.Timer(seconds, stop.set)
    timer.start()
    try:
        events = list(m.watch(name, stop=stop))
    finally:
        timer.cancel()
    final = [e.status for e in events if e.status is not None]
    status = final[-1] if final else m.get(name)
    return status, events


def submit(m: JobManager, cell: str, **kw) -> str:  # type: ignore[no-untyped-def]
    name = f"gang-{uuid.uuid4().hex[:6]}"
    spec = JobSpec(name=name, backend="kubernetes", namespace=NAMESPACE, gang=GANG, **kw)
    m.submit(spec, build_bundle(cell))
    return name


def succeeded_as_a_gang_of_two(gang: JobManager, name: str) -> list[str]:
    """The job's PodGroup asks for 2 members and the job succeeds; every line it printed."""
    pg = admin_json("get", "podgroups.scheduling.x-k8s.io", name)
    assert pg["spec"]["minMember"] == 2, pg
    status, events = follow(gang, name, 240)
    got = lines(events)
    assert status.state is JobState.SUCCEEDED, (status.message, got)
    return [ln for replica in got.values() for ln in replica]


def test_a_gang_pytorchjob_runs_to_succeeded_on_coscheduling(gang):
    built("training-operator")
    name = submit(gang, TORCH_CELL, strategy="torch-ddp", replicas={"Master": 1, "Worker": 1})
    try:
        flat = succeeded_as_a_gang_of_two(gang, name)
        assert any("rank 0 of 2 sum 3.0" in ln for ln in flat), flat
        assert scheduled_by(name) == {SCHEDULER}, scheduled_by(name)
    finally:
        gang.delete(name)


def test_a_gang_mpijob_starts_its_launcher_and_runs_to_succeeded(gang):
    """minMember counts the two workers; the launcher, made once they are Ready, joins
    a gang already placed, so neither waits on the other."""
    built("mpi-operator")
    name = submit(
        gang,
        MPI_CELL,
        strategy="horovod",
        replicas={"Worker": 2},
        image="mpioperator/openmpi:0.8.0",
    )
    try:
        flat = succeeded_as_a_gang_of_two(gang, name)
        for rank in (0, 1):
            assert any(f"rank {rank} of 2 sum 3" in ln for ln in flat), flat
        assert scheduled_by(name) == {SCHEDULER}, scheduled_by(name)
    finally:
        gang.delete(name)


def test_a_gang_that_cannot_fit_waits_with_the_reason_and_never_half_starts(gang):
    """Each replica alone fits the node (16 cpu), the two together do not: a plain
    scheduler would start one; the gang places none and says why."""
    built("training-operator")
    big = Resources(cpu="12")
    name = submit(
        gang,
        "print('never')\n",
        strategy="torch-ddp",
        replicas={"Master": 1, "Worker": 1},
        resources={"Master": big, "Worker": big},
    )
    try:
        # what the cell shows while it waits: the first line that gives the scheduler's reason
        stop = threading.Event()
        timer = threading.Timer(120, stop.set)
        timer.start()
        said, states = "", set()
        try:
            for ev in gang.watch(name, stop=stop):
                if ev.status is not None:
                    states.add(ev.status.state)
                rs = ev.replica_status
                text = ev.message or (rs.message if rs is not None else None) or ""
                if "FailedScheduling" in text and SCHEDULER_SAYS in text:
                    said = text
                    stop.set()
        finally:
            timer.cancel()
        assert said, states
        assert "\n" not in said and len(said) < 2000, said
        assert not states & {JobState.RUNNING, JobState.SUCCEEDED, JobState.FAILED}, states
        pods = job_pods(name)
        assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
        assert all(not p["spec"].get("nodeName") for p in pods), pods
        assert all(p["spec"]["schedulerName"] == SCHEDULER for p in pods), pods
    finally:
        gang.delete(name)
    left: list[str] = []
    for _ in range(60):
        got = kubectl(
            "-n", NAMESPACE, "get", "pytorchjobs,pods,podgroups.scheduling.x-k8s.io,configmaps",
            "-o", "name", kubeconfig=ADMIN,
        )  # fmt: skip
        left = [ln for ln in got.stdout.split() if name in ln]
        if not left:
            break
        time.sleep(1)
    assert not left, left
