"""What the real operators do to our jobs, refereed by the real tier: a crashing
TrainJob under its own backoff limit (each Trainer release the tier builds, JobSet, the Job controller); a
worker held by an init container that keeps failing (training-operator v1.9); as the
cell sees them through ``JobManager``. Then kube-apiserver's and kube-scheduler's own:
graceful deletion (the same check as the double's), an unscheduled pod's log, and a
FailedScheduling written as an events.k8s.io series.
"""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.core.placement import Resources
from jupyter_ddl.core.spec import JobSpec
from jupyter_ddl.core.states import JobState
from jupyter_ddl.core.stream import EventKind
from tests.cluster.test_distribute_real import lines, manager, run_cell  # noqa: F401
from tests.cluster.tier import (
    EVERY_TRAINER,
    KUBECONFIG,
    MARKS,
    NAMESPACE,
    POD,
    TRAINER,
    built,
    create,
    kubectl,
    wait_for,
)
from tests.k8s import deletion

pytestmark = MARKS


@EVERY_TRAINER
def test_trainjob_that_raises_fails_after_one_restart_with_its_root_cause(
    manager,  # noqa: F811
    runtimes_readable,
):
    built(f"trainer-{TRAINER}")
    built("jobset-controller")
    cell = "raise ValueError('the cell is broken')\n"
    state, message, events = run_cell(
        manager, "torch-ddp", {"Node": 1}, cell, 240, target="TrainJob", backoff_limit=1
    )
    assert state is JobState.FAILED, (message, lines(events))
    assert "ValueError: the cell is broken" in message, message
    # the job's states as the cell showed them: Pending, Running, Failed, in that order,
    # never back to Pending while the replica restarts in place
    shown = [e.status.state for e in events if e.kind is EventKind.STATUS and e.status]
    changes = [s for i, s in enumerate(shown) if i == 0 or s != shown[i - 1]]
    order = [JobState.PENDING, JobState.RUNNING, JobState.FAILED]
    assert [s for s in order if s in changes] == changes, changes
    assert changes[-1] is JobState.FAILED, changes
    # the restart is the replica's, counted against the limit the job asked for
    finals = [e.status for e in events if e.status is not None]
    assert finals[-1].backoff_limit == 1, finals[-1]
    assert sum(r.restarts for r in finals[-1].replicas) == 1, finals[-1].replicas
    # the kubelet restarts at once after a first failure, so under a limit of 1 the Job
    # fails as the restarted run starts: the replica shows its one restart, no state
    # of the job's own
    restarted = [
        e.replica_status
        for e in events
        if e.kind is EventKind.REPLICA and e.replica_status and e.replica_status.restarts == 1
    ]
    assert restarted, [e.replica_status for e in events if e.kind is EventKind.REPLICA]
    assert JobState.RESTARTING not in changes
    # deleted (run_cell's end), the job goes, its own TrainingRuntime with it: deleted in
    # the foreground it stayed Terminating for good, Trainer's webhook refusing the
    # garbage collector's last update once the runtime was gone
    job = events[0].job
    for kind in ("trainjob", "trainingruntime"):
        wait_for(
            f"{kind} {job} gone",
            lambda k=kind: kubectl("-n", NAMESPACE, "get", k, job, check=False).returncode != 0,
            60,
        )


def follow(m, name: str, seconds: float, from_start: bool = True, until=None) -> list:
    """The job's events as the cell would show them, for at most ``seconds``; ``until``
    (an event -> bool) ends the watch early."""
    stop = threading.Event()
    timer = threading.Timer(seconds, stop.set)
    timer.start()
    out = []
    try:
        for e in m.watch(name, stop=stop, from_start=from_start):
            out.append(e)
            if until is not None and until(e):
                break
    finally:
        timer.cancel()
    return out


#: a PyTorchJob whose worker carries an init container that always fails (as one a
#: PodDefault injects, fetching data that is not there); training-operator appends its
#: own init-pytorch after it
BROKEN_INIT = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: {name}}}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - {{name: pytorch, image: python:3.11, command: [python3, -c, "import time; time.sleep(300)"]}}
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          initContainers:
          - name: fetch-data
            image: busybox:1.36
            command: [python3, -c, "import sys; print('no dataset at /data'); sys.exit(3)"]
          containers:
          - {{name: pytorch, image: python:3.11, command: [python3, -c, "print('never')"]}}
"""


def test_a_worker_whose_init_container_keeps_failing_ends_the_job_failed(manager):  # noqa: F811
    built("training-operator")
    name = f"init-{uuid.uuid4().hex[:6]}"
    made = create(BROKEN_INIT.format(name=name))
    assert made.returncode == 0, made.stderr
    try:
        held = follow(
            manager,
            name,
            90,
            until=lambda e: e.kind is EventKind.WAITING and (e.message or "").startswith("Init:"),
        )
        # the operator's own init container comes after ours and has not run
        got = kubectl("-n", NAMESPACE, "get", "pod", f"{name}-worker-0", "-o", "json", check=False)
        assert got.returncode == 0, (got.stderr, [(e.kind, e.message, e.status) for e in held])
        pod = json.loads(got.stdout)
        inits = [c["name"] for c in pod["spec"]["initContainers"]]
        assert inits == ["fetch-data", "init-pytorch"], inits
        statuses = {s["name"]: s for s in pod["status"]["initContainerStatuses"]}
        assert "waiting" in statuses["init-pytorch"]["state"], statuses
        assert pod["status"]["phase"] == "Pending", pod["status"]
        events = held + follow(manager, name, 120)
        waiting = [e.message or "" for e in events if e.kind is EventKind.WAITING]
        # the init container's own reason reaches the cell while the worker waits
        assert any("init container fetch-data failed (exit code 3" in w for w in waiting), waiting
        final = [e.status for e in events if e.status is not None][-1]
        assert final.state is JobState.FAILED, (final.message, waiting)
        assert "worker-0 can never start: init container fetch-data failed 3 times" in (
            final.message or ""
        ), final.message
    finally:
        kubectl("-n", NAMESPACE, "delete", "pytorchjob", name, "--wait=false", check=False)


def test_pods_are_deleted_gracefully_as_the_double_does(tier):
    from kubernetes import config as kube_config
    from kubernetes.client import CoreV1Api

    core = CoreV1Api(kube_config.new_client_from_config(str(KUBECONFIG)))
    running, nowhere = f"grace-{uuid.uuid4().hex[:6]}", f"nowhere-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_pod(NAMESPACE, deletion.sleeper(running))
    core.create_namespaced_pod(NAMESPACE, deletion.sleeper(nowhere, cpu="500"))
    try:
        deletion.check_graceful_deletion(core, NAMESPACE, running, nowhere)
    finally:
        for pod in (running, nowhere):
            kubectl(
                "-n",
                NAMESPACE,
                "delete",
                "pod",
                pod,
                "--wait=false",
                "--ignore-not-found",
                check=False,
            )


def _scheduling_failures(pod: str) -> list[dict]:
    read = kubectl("-n", NAMESPACE, "get", "events.events.k8s.io", "-o", "json", check=False)
    assert read.returncode == 0, read.stderr
    got = json.loads(read.stdout)
    return [
        e
        for e in got["items"]
        if e.get("reason") == "FailedScheduling" and (e.get("regarding") or {}).get("name") == pod
    ]


def _retry_scheduling(pod: str, have: int) -> list[dict]:
    """A scheduled pod deleted: the scheduler tries the unscheduled ones again
    (NodeResourcesFit queues them on any scheduled pod's deletion). The pod's
    FailedScheduling events once one more occurrence was written."""
    helper = f"helper-{uuid.uuid4().hex[:6]}"
    assert create(POD.format(name=helper)).returncode == 0
    wait_for(
        "the helper scheduled",
        lambda: (
            kubectl("-n", NAMESPACE, "get", "pod", helper, "-o", "jsonpath={.spec.nodeName}").stdout
        ),
        30,
    )
    kubectl("-n", NAMESPACE, "delete", "pod", helper, "--wait=false")
    return wait_for(
        "one more FailedScheduling",
        lambda: (
            (got := _scheduling_failures(pod))
            and sum(int((e.get("series") or {}).get("count") or 1) for e in got) > have
            and got
        ),
        40,
    )


def _occurrences(events: list[dict]) -> int:
    return sum(int((e.get("series") or {}).get("count") or 1) for e in events)


def test_an_ongoing_scheduling_failure_is_a_series_a_reattached_cell_still_shows(manager):  # noqa: F811
    built("training-operator")
    spec = JobSpec(
        name=f"sched-{uuid.uuid4().hex[:6]}",
        strategy="torch-ddp",
        replicas={"Master": 1, "Worker": 1},
        default_resources=Resources(cpu="500"),  # more than the node has
        backend="kubernetes",
        namespace=NAMESPACE,
    )
    manager.submit(spec, build_bundle("print('never runs')\n"))
    pod = f"{spec.name}-master-0"
    try:
        wait_for("a FailedScheduling event", lambda: _scheduling_failures(pod), 60)
        # an unscheduled pod's log: 200 with nothing in it, through the apiserver
        raw = kubectl("get", "--raw", f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}/log")
        assert raw.returncode == 0 and raw.stdout == "", (raw.stdout, raw.stderr)
        assert list(manager.logs(spec.name)) == []
        # the first occurrence names the pod as it was before the scheduler wrote its
        # PodScheduled condition, so the second is a new event; the third repeats it
        second = _retry_scheduling(pod, 1)
        before = {e["metadata"]["name"]: e["eventTime"] for e in second}
        # a cell attached now (its kernel restarted): every eventTime is older than it
        time.sleep(1.5)
        seen: list = []
        attached = threading.Thread(
            target=lambda: seen.extend(
                follow(
                    manager,
                    spec.name,
                    60,
                    from_start=False,
                    until=lambda e: "FailedScheduling" in (e.message or ""),
                )
            )
        )
        attached.start()
        time.sleep(3)
        third = _retry_scheduling(pod, _occurrences(second))
        series = [e for e in third if e.get("series")]
        assert series, third
        again = series[0]
        assert again["eventTime"] == before[again["metadata"]["name"]], (before, again)
        assert again["series"]["count"] == 2, again
        assert again["series"]["lastObservedTime"] > again["eventTime"], again
        attached.join(70)
        shown = [e.message or "" for e in seen if e.kind is EventKind.WAITING]
        assert any("FailedScheduling" in m and "Insufficient cpu" in m for m in shown), shown
    finally:
        manager.delete(spec.name)


V2_0 = pytest.mark.skipif(
    not TRAINER.startswith("v2.0."),
    reason=f"the tier runs Trainer {TRAINER}; CLUSTER_TRAINER=v2.0.0 runs the oldest release",
)


def v2_0_job(manager, code: str):  # noqa: F811
    """Submit a one-node TrainJob to the v2.0 tier as the notebook user; its handle."""
    built(f"trainer-{TRAINER}")
    built("jobset-controller")
    spec = JobSpec(
        name=f"old-{uuid.uuid4().hex[:6]}",
        strategy="torch-ddp",
        replicas={"Node": 1},
        target="TrainJob",
        backend="kubernetes",
        namespace=NAMESPACE,
    )
    return spec, manager.submit(spec, build_bundle(code))


def node_pods(job: str) -> list:
    return wait_for(
        "the node pod",
        lambda: json.loads(
            kubectl(
                "-n", NAMESPACE, "get", "pods", "-l",
                f"jobset.sigs.k8s.io/jobset-name={job}", "-o", "json",
            ).stdout
        )["items"],
        60,
    )  # fmt: skip


@EVERY_TRAINER
@V2_0
def test_a_trainer_v2_0_trainjob_carries_the_istio_opt_out_and_raises_no_false_alarm(
    manager,  # noqa: F811
    runtimes_readable,
):
    spec, handle = v2_0_job(manager, "import time; time.sleep(3); print('done')\n")
    try:
        # v2.0's podSpecOverrides carry no pod metadata: the opt-out comes through the
        # job's own runtime, so it is on the pods themselves
        pods = node_pods(spec.name)
        notes = pods[0]["metadata"].get("annotations") or {}
        own = kubectl(
            "-n", NAMESPACE, "get", "trainingruntime", spec.name, "-o", "json", check=False
        )
        assert notes.get("sidecar.istio.io/inject") == "false", (notes, handle.warnings, own.stdout)
        labels = pods[0]["metadata"].get("labels") or {}
        assert labels.get("jupyter-ddl.io/managed") == "true", labels
        assert handle.warnings == [], handle.warnings
        events = follow(manager, spec.name, 120)
        final = [e.status for e in events if e.status is not None][-1]
        assert final.state is JobState.SUCCEEDED, final.message
        waiting = [e.message or "" for e in events if e.kind is EventKind.WAITING]
        # v2.0 writes no TrainJob status before the end: that is no sign of a dead operator
        assert not any("is trainer" in w.lower() or "no status" in w for w in waiting), waiting
    finally:
        manager.delete(spec.name)


@EVERY_TRAINER
@V2_0
def test_a_trainer_v2_0_trainjob_whose_runtime_cannot_be_read_runs_and_says_why_it_has_no_opt_out(
    manager,  # noqa: F811
):
    """v2.0 as its own manifests install it: the notebook user may not read the
    ClusterTrainingRuntime, so no runtime of the job's own can be copied. The job runs on
    the runtime it names, and the warning names the missing read."""
    spec, handle = v2_0_job(manager, "print('done')\n")
    try:
        said = " ".join(handle.warnings)
        assert "ClusterTrainingRuntime 'torch-distributed' cannot be read" in said, said
        assert "get on clustertrainingruntimes" in said, said
        none = kubectl("-n", NAMESPACE, "get", "trainingruntime", spec.name, check=False)
        assert none.returncode != 0, none.stdout
        pods = node_pods(spec.name)
        assert "sidecar.istio.io/inject" not in (pods[0]["metadata"].get("annotations") or {})
        events = follow(manager, spec.name, 120)
        final = [e.status for e in events if e.status is not None][-1]
        assert final.state is JobState.SUCCEEDED, final.message
    finally:
        manager.delete(spec.name)
