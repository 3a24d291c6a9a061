"""What the real operators, schedulers and kubelets do to our jobs, shown against the
API double, which behaves as they do (the sources are in each docstring and in
``docs/operator-contract.md``). Each test failed on the product before its fix."""

from __future__ import annotations

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.models import EventKind, GangScheduling, JobSpec, JobState

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
    assert any("gang ran" in line for line in logs(events))  # two ranks may share a line


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


def _notebook_pod(double, monkeypatch, image: str) -> None:
    monkeypatch.setenv("NB_PREFIX", "/notebook/team-a/nb")
    monkeypatch.setenv("HOSTNAME", "nb-0")
    double.store.create("core/v1/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "nb-0", "namespace": NAMESPACE, "labels": {"notebook-name": "nb"}},
        "spec": {"containers": [{"name": "nb", "image": image}]},
        "status": {"phase": "Running"}})  # fmt: skip


def _written(double) -> list[str]:
    with double.store.cond:
        return [f"{rid} {o['metadata']['name']}" for _, kind, rid, o in double.store.history
                if kind == "ADDED" and rid != "core/v1/pods" and "events" not in rid
                and "namespaces" not in rid]  # fmt: skip


@pytest.mark.parametrize(
    ("strategy", "extra", "missing"),
    [("horovod", {"replicas": {"Worker": 2}, "gang": GangScheduling()}, "no sshd or mpirun"),
     ("deepspeed", {"target": "TrainJob", "replicas": {"Node": 2}}, "runs mpirun over ssh as uid 1000")],
)  # fmt: skip
def test_mpi_over_ssh_on_an_image_that_cannot_is_refused_before_any_write(
    make_backend, double, monkeypatch, strategy, extra, missing
):
    """Kubeflow's notebook images have no sshd, ssh client or MPI and run as uid 1000
    (kubeflow/kubeflow ``components/example-notebook-servers/base/Dockerfile``); an
    MPIJob worker on one fails at start and the launcher never comes. Trainer's
    deepspeed runtime needs its own image's ssh setup on the launcher, which
    ``trainer.image`` replaces. Without ``--image`` both are refused, in one line,
    before anything is written; with it, the user's claim is taken."""
    double.catalog.crds.append("PodGroup/v1beta1")
    _notebook_pod(double, monkeypatch, "kubeflownotebookswg/jupyter-pytorch:v1.10.0")
    b = make_backend()
    before = _written(double)
    spec = JobSpec(name=name("ssh"), strategy=strategy, command=RUN_CELL, **extra)
    with pytest.raises(ValidationError) as e:
        b.submit(spec, build_bundle("print('x')\n"))
    line = str(e.value)
    assert missing in line and "--image" in line and "\n" not in line
    assert _written(double) == before
    ok = JobSpec(name=name("ssh"), strategy=strategy, command=RUN_CELL, image="team/mpi:1", **extra)
    b.submit(ok, build_bundle("print('x')\n"))
    b.cancel(ok.name)


def test_a_crashing_trainjob_fails_and_never_goes_back_to_pending(backend, double):
    """JobSet defaults its pods to ``OnFailure`` and the Job controller counts their
    in-place restarts against ``backoffLimit`` (6 by default; Trainer's runtimes set
    none): a crashing cell fails the TrainJob after 7 starts. Meanwhile the TrainJob
    has no Running condition, and a replica restarting in place must not make the
    job Pending again."""
    # a shell, not torchrun: seven starts of a Python stack would take most of a minute
    spec = JobSpec(name=name("crash"), strategy="torch-ddp", target="TrainJob", replicas={"Node": 1},
                   command=["sh", "-c", "echo about to fail; exit 3"])  # fmt: skip
    backend.submit(spec, build_bundle("pass\n"))
    events = watch(backend, spec.name, timeout=60)
    states = [e.status.state for e in events if e.kind == EventKind.STATUS]
    last = [e.status for e in events if e.kind == EventKind.STATUS][-1]
    assert final_state(events) == JobState.FAILED, (logs(events)[-8:], last.replicas[0].restarts)
    seen: list[JobState] = []
    for s in states:
        if not seen or seen[-1] != s:
            seen.append(s)
    assert JobState.RUNNING in seen
    assert JobState.PENDING not in seen[seen.index(JobState.RUNNING) :], seen
    final = [e.status for e in events if e.kind == EventKind.STATUS][-1]
    assert final.backoff_limit == 6 and final.replicas[0].restarts >= 6, final.replicas


def test_a_worker_held_by_its_init_container_says_why(make_backend, double):
    """training-operator gives every PyTorchJob worker an ``init-pytorch`` init
    container (``alpine:3.10`` from Docker Hub); on a cluster that cannot pull it the
    worker sits in ``Init:ImagePullBackOff`` while our container says only
    ``PodInitializing``. The replica must say which init container and why."""
    double.scenario.unpullable_images.add("alpine:3.10")
    b = make_backend()
    spec = JobSpec(name=name("init"), strategy="torch-ddp", replicas={"Master": 1, "Worker": 1},
                   command=RUN_CELL)  # fmt: skip
    b.submit(spec, build_bundle("import time\ntime.sleep(30)\n"))  # the master waits

    def told(evs) -> bool:
        return any("Init:ImagePullBackOff" in (e.message or "") for e in evs
                   if e.kind == EventKind.WAITING and e.replica == "worker-0")  # fmt: skip

    events = watch(b, spec.name, timeout=30, until=told)
    assert told(events), [e.message for e in events if e.kind == EventKind.WAITING]
    line = next(
        e.message for e in events if e.kind == EventKind.WAITING and "Init:" in (e.message or "")
    )
    assert "init-pytorch" in line and "alpine:3.10" in line
    b.cancel(spec.name)


@pytest.mark.parametrize(
    ("init", "expect"),
    [({"name": "init-pytorch", "state": {"waiting": {"reason": "CrashLoopBackOff"}}, "restartCount": 3,
       "lastState": {"terminated": {"exitCode": 1}}}, "Init:CrashLoopBackOff: init container init-pytorch failed (exit code 1"),
     ({"name": "init-pytorch", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}, "restartCount": 0},
      "Init:Error: init container init-pytorch failed (exit code 1"),
     ({"name": "init-pytorch", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}, None)],
)  # fmt: skip
def test_init_container_reasons(init, expect):
    from jupyter_ddl.backends.kubernetes import reasons

    status = {"phase": "Pending", "initContainerStatuses": [init],
              "containerStatuses": [{"name": "pytorch", "state": {"waiting": {"reason": "PodInitializing"}}}]}  # fmt: skip
    got = reasons.pod_waiting({"status": status})
    assert (got is None) if expect is None else (got or "").startswith(expect), got


def test_an_ongoing_event_series_is_fresh():
    """kube-scheduler writes FailedScheduling through events.k8s.io: ``eventTime`` stays
    at the first occurrence, ``series.lastObservedTime`` moves, ``lastTimestamp`` is
    unset. A watcher attached after the series began must still see it as current."""
    from jupyter_ddl.backends.kubernetes.reasons import last_seen

    ev = {"reason": "FailedScheduling", "eventTime": "2026-01-01T00:00:00.000000Z",
          "series": {"count": 40, "lastObservedTime": "2026-01-01T00:20:00.000000Z"}}  # fmt: skip
    assert last_seen(ev) == last_seen({"lastTimestamp": "2026-01-01T00:20:00Z"})
    assert last_seen({"eventTime": "2026-01-01T00:00:00.000000Z"}) == last_seen(
        {"lastTimestamp": "2026-01-01T00:00:00Z"}
    )
    assert last_seen({}) is None


@pytest.mark.parametrize(
    ("release", "reaches"), [("v2.3.0", True), ("v2.1.0", True), ("v2.0.0", False)]
)
def test_poddefault_labels_reach_trainjob_pods(release, reaches):
    """A PodDefault selects pods by label; the notebook's PodDefault labels are copied
    onto our pod templates so its credentials reach the replicas. A TrainJob's pods
    get them through the release's override field that carries pod metadata
    (``podTemplateOverrides`` v2.1, ``runtimePatches`` v2.2 on); v2.0 has none."""
    from jupyter_ddl.backends.kubernetes import notebook
    from jupyter_ddl.core.shape import TRAINER_RELEASE_OPTION
    from jupyter_ddl.manifests import build_manifests

    spec = JobSpec(name="tj", strategy="torch-ddp", target="TrainJob", replicas={"Node": 2},
                   backend_options={TRAINER_RELEASE_OPTION: release})  # fmt: skip
    job = build_manifests(spec, image="img", command=["python", "x.py"])[0]
    notebook.add_template_labels(job, {"access-ml-pipeline": "true"})
    found = [t["metadata"]["labels"].get("access-ml-pipeline") for t in notebook.pod_templates(job)]
    assert (found and all(v == "true" for v in found)) if reaches else found == []


def test_a_reconnect_after_log_rotation_loses_no_line_it_could_read(backend, double):
    """The kubelet serves a new log request from the current file only and rotates it
    at containerLogMaxSize (kubernetes ``pkg/kubelet/kuberuntime/logs/logs.go``): after
    a cut and a rotation, skipping as many lines as were delivered drops lines of the
    new file. Resumed from the last timestamp, every line the new file holds arrives,
    none twice."""
    cell = (
        "import time\nfor i in range(16):\n    print('tick', i, flush=True)\n    time.sleep(0.25)\n"
    )
    spec = JobSpec(
        name=name("rot"), strategy="tf-mirrored", replicas={"Worker": 1}, command=RUN_CELL
    )
    backend.submit(spec, build_bundle(cell))
    events: list = []
    served: list[str] = []
    for ev in backend.watch(spec.name):
        events.append(ev)
        if ev.kind == EventKind.LOG and ev.log.text == "tick 5" and not served:
            pod = next(p for p in double.store.list("core/v1/pods", NAMESPACE)[0]
                       if p["metadata"]["name"].startswith(spec.name))  # fmt: skip
            cid = pod["status"]["containerStatuses"][0]["containerID"]
            at = double.store.log_rotate(cid)
            double.state.drop_streams()
            served = [cid, str(at)]
    assert served, "the log was never rotated"
    texts = [e.log.text for e in events if e.kind == EventKind.LOG]
    buf = double.store.log_buffer(served[0])
    after = [t for _, t in buf.lines[int(served[1]) :]]
    assert len(texts) == len(set(texts)), texts  # nothing twice
    assert set(after) <= set(texts), (after, texts)  # every line of the new file
    assert texts[-1] == "tick 15"
