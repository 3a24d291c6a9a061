"""End to end: the real ``kubernetes`` client against the API double, whose operator
and kubelet run every pod as a local process. Real logs from several pods, a pod
that crashes and restarts (new container ID), a pod that appears late, a failing pod,
waiting reasons, 410 Gone during a watch, cancel by suspend, re-attach by name."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.manifests import CODE_DIR, WORK_DIR
from jupyter_ddl.models import EventKind, JobSpec, JobState, ReplicaState, RestartPolicy

RUN_CELL = ["python", "-u", f"{CODE_DIR}/cell.py"]  # the cell itself, no framework shim

CELL = """\
import os, sys, time
rank = os.environ["RANK"]
print(f"rank {rank} of {os.environ['WORLD_SIZE']} master {os.environ['MASTER_ADDR']}", flush=True)
marker = os.path.join(os.environ["MARKER_DIR"], "crashed-" + rank)
if rank == "1" and not os.path.exists(marker):
    open(marker, "w").close()
    print("rank 1 crashing on purpose", flush=True)
    sys.exit(2)
for step in range(3):
    print(f"step={step} loss={1.0 / (step + 1):.3f} rank={rank}", flush=True)
    time.sleep(0.05)
open(os.path.join(os.environ["MARKER_DIR"], "done-" + rank), "w").close()
# like a final barrier: the master (whose end ends a PyTorchJob) waits for the others
deadline = time.time() + 30
while rank == "0" and time.time() < deadline and not all(
    os.path.exists(os.path.join(os.environ["MARKER_DIR"], f"done-{r}")) for r in ("1", "2")
):
    time.sleep(0.05)
"""


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def collect(backend, job: str, timeout: float = 40.0, **kw):
    stop = threading.Event()
    timer = threading.Timer(timeout, stop.set)
    timer.start()
    try:
        return list(backend.watch(job, stop=stop, **kw))
    finally:
        timer.cancel()


def torch_job(tmp_path, **fields) -> tuple[JobSpec, object]:
    spec = JobSpec(name=name("pt"), strategy="torch-ddp", replicas={"Master": 1, "Worker": 2},
                   command=RUN_CELL, env={"MARKER_DIR": str(tmp_path)}, **fields)  # fmt: skip
    return spec, build_bundle(CELL)


def test_logs_from_every_pod_with_a_restart_and_a_late_pod(backend, double, tmp_path):
    spec, bundle = torch_job(tmp_path)
    double.operator.late["worker-1"] = 1.5  # its pod is created 1.5 s after the others
    backend.submit(spec, bundle)
    events = collect(backend, spec.name)

    assert events[-1].kind == EventKind.STATUS and events[-1].status.state == JobState.SUCCEEDED
    logs = [e.log for e in events if e.kind == EventKind.LOG]
    by_replica = {
        r: [ln.text for ln in logs if ln.replica == r] for r in ("master-0", "worker-0", "worker-1")
    }
    assert all(any("step=2" in t for t in texts) for texts in by_replica.values()), by_replica
    assert by_replica["master-0"][0] == "rank 0 of 3 master 127.0.0.1"
    # worker-0 is rank 1: its first container crashed, the second one ran to the end
    w0 = by_replica["worker-0"]
    assert w0.index("rank 1 crashing on purpose") < w0.index("step=0 loss=1.000 rank=1")
    offsets = [ln.offset for ln in logs if ln.replica == "worker-0"]
    assert offsets == list(range(len(offsets)))  # one numbering across both containers
    restarted = [
        e.replica_status
        for e in events
        if e.kind == EventKind.REPLICA and e.replica == "worker-0" and e.replica_status.restarts
    ]
    assert restarted and "rank 1 crashing on purpose" in restarted[0].last_lines
    # the late pod's first line comes after the others' first lines
    first = {
        r: next(i for i, e in enumerate(events) if e.kind == EventKind.LOG and e.replica == r)
        for r in by_replica
    }
    assert first["worker-1"] > first["master-0"] and first["worker-1"] > first["worker-0"]
    metrics = [e for e in events if e.kind == EventKind.METRIC and e.replica == "master-0"]
    assert [m.step for m in metrics] == [0, 1, 2] and metrics[-1].metrics == {
        "loss": pytest.approx(1 / 3, abs=1e-3)
    }
    # offsets and text survive a later non-following read (previous + current container)
    again = [ln.text for ln in backend.logs(spec.name, replica="worker-0")]
    assert again == w0


def test_failing_pod_names_replica_exit_code_and_last_lines(backend, tmp_path):
    # rank 2 fails while the master still waits for it (as in a collective)
    cell = (
        "import os, sys, time\nprint('rank', os.environ['RANK'], flush=True)\n"
        "if os.environ['RANK'] == '2':\n    print('giving up', flush=True)\n    sys.exit(3)\n"
        "time.sleep(30 if os.environ['RANK'] == '0' else 0)\n"
    )
    spec = JobSpec(name=name("fail"), strategy="torch-ddp", replicas={"Master": 1, "Worker": 2},
                   command=RUN_CELL, restart_policy=RestartPolicy.NEVER)  # fmt: skip
    backend.submit(spec, build_bundle(cell))
    events = collect(backend, spec.name)
    final = events[-1].status
    assert final.state == JobState.FAILED
    assert final.message.startswith("worker-1 · rank 2 failed first: exit code 3")
    failed = [
        e.replica_status
        for e in events
        if e.kind == EventKind.REPLICA and e.replica_status.state == ReplicaState.FAILED
    ]
    assert failed[0].id == "worker-1" and failed[0].exit_code == 3
    # its last lines come from the pod's log, which the watcher may read after it saw
    # the container end: the final status has them
    (worker,) = [r for r in final.replicas if r.id == "worker-1"]
    assert worker.last_lines[-1] == "giving up"


def test_waiting_reasons_for_unschedulable_and_image_pull(backend, double, tmp_path):
    double.scenario.unschedulable["worker-1"] = (
        "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    )
    double.scenario.image_pull.add("master-0")
    spec = JobSpec(name=name("wait"), strategy="torch-ddp", replicas={"Master": 1, "Worker": 2},
                   command=["python", "-c", "import time; time.sleep(60)"])  # fmt: skip
    backend.submit(spec, build_bundle("pass\n"))
    stop = threading.Event()
    timer = threading.Timer(30, stop.set)  # fail, not hang, if a reason never comes
    timer.daemon = True
    timer.start()
    seen: list[str] = []
    for ev in backend.watch(spec.name, stop=stop):
        if ev.kind == EventKind.WAITING:
            seen.append(f"{ev.replica}: {ev.message}")
        if any("Insufficient nvidia.com/gpu" in s for s in seen) and any(
            "ImagePullBackOff" in s for s in seen
        ):
            stop.set()
    text = "\n".join(seen)
    assert "worker-1: FailedScheduling" in text and "not enough free GPUs" in text
    assert "master-0: ImagePullBackOff" in text
    status = backend.get(spec.name)
    assert {r.id: r.state for r in status.replicas}["worker-1"] == ReplicaState.PENDING
    assert backend.cancel(spec.name).state == JobState.CANCELLED


def test_watch_relists_after_410_gone(backend, double, tmp_path):
    cell = (
        "import time\nfor i in range(12):\n    print('tick', i, flush=True)\n    time.sleep(0.2)\n"
    )
    spec = JobSpec(
        name=name("gone"), strategy="tf-mirrored", replicas={"Worker": 1}, command=RUN_CELL
    )
    backend.submit(spec, build_bundle(cell))
    events = []
    for ev in backend.watch(spec.name):
        events.append(ev)
        if ev.kind == EventKind.LOG and ev.log.text == "tick 2":
            double.expire_watches()  # every open watch gets ERROR 410 and must re-list
    ticks = [e.log.text for e in events if e.kind == EventKind.LOG]
    assert ticks == [f"tick {i}" for i in range(12)]
    assert events[-1].status.state == JobState.SUCCEEDED
    pod_lists = [
        p for _, p in double.requests("GET", "/api/v1/namespaces/team-a/pods?") if "watch=" not in p
    ]
    assert len(pod_lists) >= 2  # listed again after the 410


def test_cancel_suspends_and_reattach_by_name(backend, make_backend, double):
    cell = "import time\nprint('working', flush=True)\ntime.sleep(60)\n"
    spec = JobSpec(
        name=name("susp"),
        strategy="torch-ddp",
        replicas={"Master": 1, "Worker": 1},
        command=RUN_CELL,
    )
    backend.submit(spec, build_bundle(cell))
    other = make_backend()  # a fresh kernel: finds the job by name, no local state
    for ev in other.watch(spec.name, from_start=True):
        if ev.kind == EventKind.LOG:
            break
    assert other.spec(spec.name).command == RUN_CELL
    status = other.cancel(spec.name)
    assert status.state == JobState.CANCELLED
    job = double.store.get("kubeflow.org/v1/pytorchjobs", "team-a", spec.name)
    assert job["spec"]["runPolicy"]["suspend"] is True  # suspended, not deleted
    deadline = time.monotonic() + 10
    while double.store.list(
        "core/v1/pods", "team-a", f"training.kubeflow.org/job-name={spec.name}"
    )[0]:
        assert time.monotonic() < deadline, "the operator never removed the suspended job's pods"
        time.sleep(0.1)
    assert all(r.state == ReplicaState.TERMINATED for r in other.get(spec.name).replicas)
    assert [j.name for j in other.list()] == [spec.name]


def test_trainjob_pods_found_by_jobset_labels_and_run_under_torchrun(backend, double):
    cell = "import os\nprint('node', os.environ['PET_NODE_RANK'], 'rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'], flush=True)\n"
    spec = JobSpec(
        name=name("tj"),
        strategy="torch-ddp",
        target="TrainJob",
        replicas={"Node": 2},
        command=RUN_CELL,
    )
    backend.submit(spec, build_bundle(cell))
    stored = double.store.get("trainer.kubeflow.org/v1alpha1/trainjobs", "team-a", spec.name)
    # started in the work directory (a TrainJob's trainer has no workingDir), under torchrun
    assert stored["spec"]["trainer"]["command"][3:5] == [WORK_DIR, "torchrun"]
    events = collect(backend, spec.name, timeout=90)
    texts = sorted(
        e.log.text for e in events if e.kind == EventKind.LOG and e.log.text.startswith("node")
    )
    assert texts == ["node 0 rank 0 of 2", "node 1 rank 1 of 2"]
    assert events[-1].status.state == JobState.SUCCEEDED
    assert [r.id for r in events[-1].status.replicas] == ["node-0", "node-1"]


def test_mpijob_launcher_runs_mpirun_over_the_hostfile(backend, double):
    # one write per line: under `python -u` print() writes its pieces and the newline
    # separately, and two ranks' writes interleave in mpirun's output (on a cluster too)
    cell = (
        "import os, sys\ne = os.environ\n"
        "sys.stdout.write(f\"mpi rank {e.get('OMPI_COMM_WORLD_RANK')} of {e.get('OMPI_COMM_WORLD_SIZE')}\\n\")\n"
    )
    spec = JobSpec(
        name=name("mpi"),
        strategy="horovod",
        replicas={"Launcher": 1, "Worker": 2},
        command=RUN_CELL,
    )
    backend.submit(spec, build_bundle(cell))
    events = collect(backend, spec.name, timeout=60)
    texts = sorted(
        e.log.text for e in events if e.kind == EventKind.LOG and e.replica == "launcher-0"
    )
    assert [t for t in texts if t.startswith("mpi rank")] == [
        "mpi rank 0 of 2",
        "mpi rank 1 of 2",
    ], texts
    assert events[-1].status.state == JobState.SUCCEEDED
    assert sorted(r.id for r in events[-1].status.replicas) == [
        "launcher-0",
        "worker-0",
        "worker-1",
    ]


def test_reconnects_after_streams_are_cut_without_repeating_lines(backend, double):
    cell = (
        "import time\nfor i in range(12):\n    print('tick', i, flush=True)\n    time.sleep(0.2)\n"
    )
    spec = JobSpec(
        name=name("cut"), strategy="tf-mirrored", replicas={"Worker": 1}, command=RUN_CELL
    )
    backend.submit(spec, build_bundle(cell))
    events, cut = [], 0
    for ev in backend.watch(spec.name):
        events.append(ev)
        if ev.kind == EventKind.LOG and ev.log.text == "tick 3":
            cut = double.state.drop_streams()
    assert cut >= 2  # at least the pod log and a watch were cut
    logs = [e.log for e in events if e.kind == EventKind.LOG]
    assert [ln.text for ln in logs] == [f"tick {i}" for i in range(12)]
    assert [ln.offset for ln in logs] == list(range(12))
    assert events[-1].status.state == JobState.SUCCEEDED
    follows = [p for _, p in double.requests("GET", "/log?") if "follow=true" in p.lower()]
    assert len(follows) >= 2  # the log stream was opened again


def test_oomkilled_container_is_named_as_such(backend, double):
    cell = (
        "import os, signal\nprint('allocating', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n"
    )
    # one replica: with a Worker beside it, which of two SIGKILLs lands first is chance
    spec = JobSpec(name=name("oom"), strategy="torch-ddp", replicas={"Master": 1, "Worker": 0},
                   command=RUN_CELL,
                   restart_policy=RestartPolicy.NEVER)  # fmt: skip
    double.scenario.oom.add(spec.name)  # the kubelet reports these SIGKILLs as OOMKilled
    backend.submit(spec, build_bundle(cell))
    events = collect(backend, spec.name)
    final = events[-1].status
    assert final.state == JobState.FAILED
    assert final.message.startswith("master-0 · rank 0 failed first: exit code 137 (OOMKilled")
    assert any(
        e.kind == EventKind.WAITING and "raise the memory limit" in e.message for e in events
    )


def test_follow_logs_with_tail_and_watch_from_now(backend, make_backend):
    cell = (
        "import time\nfor i in range(5):\n    print('early', i, flush=True)\n"
        "time.sleep(2.5)\nfor i in range(3):\n    print('late', i, flush=True)\n"
    )
    spec = JobSpec(
        name=name("tail"), strategy="tf-mirrored", replicas={"Worker": 1}, command=RUN_CELL
    )
    backend.submit(spec, build_bundle(cell))
    deadline = time.monotonic() + 20
    while len(list(backend.logs(spec.name))) < 5:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    followed: list = []
    follower = threading.Thread(
        target=lambda: followed.extend(backend.logs(spec.name, follow=True, tail=2))
    )
    follower.start()  # while "late" lines are still to come
    now_events = collect(make_backend(), spec.name, from_start=False)
    follower.join(30)
    assert [ln.text for ln in followed] == ["early 3", "early 4", "late 0", "late 1", "late 2"]
    assert [ln.offset for ln in followed] == [3, 4, 5, 6, 7]
    now_logs = [e.log.text for e in now_events if e.kind == EventKind.LOG]
    assert now_logs == ["late 0", "late 1", "late 2"]
