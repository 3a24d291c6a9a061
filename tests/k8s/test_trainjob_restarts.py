"""A TrainJob's backoff limit and restart policy (operator-contract.md §11.4, §11.8).

No TrainJob field of any Trainer release reaches a Job's ``backoffLimit`` or its pods'
``restartPolicy``; a job that asks for either runs on a namespaced copy of its runtime
carrying them, and the Job controller enforces them as it does for any Job.
"""

from __future__ import annotations

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.core.failures import diagnose, outcomes
from jupyter_ddl.core.shape import TRAINER_RELEASE_OPTION
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.manifests import build_manifests, trainingruntime
from jupyter_ddl.models import EventKind, JobSpec, JobState, RestartPolicy
from jupyter_ddl.validation import validate

from .apidouble import NAMESPACE
from .test_findings import RUN_CELL, final_state, logs, name, watch

NS_RUNTIMES = "trainer.kubeflow.org/v1alpha1/trainingruntimes"
PODS = "core/v1/pods"


def _states(events) -> list[JobState]:
    seen: list[JobState] = []
    for e in events:
        if e.kind == EventKind.STATUS and (not seen or seen[-1] != e.status.state):
            seen.append(e.status.state)
    return seen


@pytest.mark.parametrize("release", ["v2.0.0", "v2.3.0"])
def test_a_raising_cell_with_backoff_limit_1_fails_after_one_restart(make_backend, double, release):
    """The acceptance: a cell that raises in a TrainJob with ``--backoff-limit 1`` ends
    Failed after one restart, with its root cause, and the job is only ever Pending,
    Running, Failed; a restart shows as n of the limit."""
    double.use_trainer(release)
    b = make_backend()
    spec = JobSpec(name=name("raise"), strategy="torch-ddp", target="TrainJob",
                   replicas={"Node": 1}, command=RUN_CELL, backoff_limit=1)  # fmt: skip
    b.submit(spec, build_bundle("raise ValueError('bad batch size')\n"))
    events = watch(b, spec.name, timeout=60)
    final = [e.status for e in events if e.kind == EventKind.STATUS][-1]
    assert final_state(events) == JobState.FAILED, (logs(events)[-6:], final.replicas)
    assert _states(events) in (
        [JobState.PENDING, JobState.RUNNING, JobState.FAILED],
        [JobState.RUNNING, JobState.FAILED],
    ), _states(events)
    copy = double.store.get(NS_RUNTIMES, NAMESPACE, spec.name)
    assert copy is not None
    rjobs = copy["spec"]["template"]["spec"]["replicatedJobs"]
    assert {r["template"]["spec"]["backoffLimit"] for r in rjobs} == {1}, rjobs
    assert copy["metadata"]["ownerReferences"][0]["name"] == spec.name  # goes with the job
    assert final.backoff_limit == 1
    assert final.replicas[0].restarts == 1, final.replicas
    cause = diagnose(outcomes(final.replicas)).line
    assert "ValueError: bad batch size" in cause, "\n".join(final.replicas[0].last_lines)


def test_restart_policy_never_retries_with_new_pods(make_backend, double):
    """Under ``Never`` the Job controller, not the kubelet, retries: a failed pod gets
    a successor until more pods have failed than the limit allows."""
    b = make_backend()
    spec = JobSpec(name=name("never"), strategy="torch-ddp", target="TrainJob",
                   replicas={"Node": 1}, command=["sh", "-c", "echo once; exit 3"],
                   restart_policy=RestartPolicy.NEVER, backoff_limit=1)  # fmt: skip
    b.submit(spec, build_bundle("pass\n"))
    events = watch(b, spec.name, timeout=40)
    assert final_state(events) == JobState.FAILED, logs(events)[-6:]
    pods = double.store.list(PODS, NAMESPACE, f"jobset.sigs.k8s.io/jobset-name={spec.name}")[0]
    assert sorted(p["status"]["phase"] for p in pods) == ["Failed", "Failed"], pods
    assert all(p["spec"]["restartPolicy"] == "Never" for p in pods)


def test_without_the_right_to_make_a_runtime_it_is_refused_in_one_line(make_backend, double):
    """Kubeflow's editor role may read TrainingRuntimes but not create them; the user
    is told before anything is written, with the way out."""
    double.kubeflow_edit()
    b = make_backend()
    spec = JobSpec(name=name("rbac"), strategy="torch-ddp", target="TrainJob",
                   replicas={"Node": 1}, command=RUN_CELL, backoff_limit=2)  # fmt: skip
    with pytest.raises(ValidationError) as e:
        b.submit(spec, build_bundle("pass\n"))
    line = str(e.value)
    assert "create on trainingruntimes" in line and "--backoff-limit" in line and "\n" not in line
    assert double.store.list(NS_RUNTIMES, NAMESPACE)[0] == []
    plain = JobSpec(name=name("rbac"), strategy="torch-ddp", target="TrainJob",
                    replicas={"Node": 1}, command=["sh", "-c", "true"])  # fmt: skip
    b.submit(plain, build_bundle("pass\n"))  # without them nothing more is needed
    b.cancel(plain.name)


@pytest.mark.parametrize("release", ["v2.0.0", "v2.1.0", "v2.2.0", "v2.3.0"])
def test_the_trainjob_names_its_own_runtime_only_when_asked(release):
    opts = {TRAINER_RELEASE_OPTION: release}
    base = JobSpec(name="tj", strategy="torch-ddp", target="TrainJob", replicas={"Node": 2},
                   backend_options=opts)  # fmt: skip
    ref = build_manifests(base, image="i", command=["python", "x.py"])[0]["spec"]["runtimeRef"]
    assert ref["kind"] == "ClusterTrainingRuntime" and ref["name"] == "torch-distributed"
    asked = JobSpec(name="tj", strategy="torch-ddp", target="TrainJob", replicas={"Node": 2},
                    backend_options=opts, restart_policy=RestartPolicy.NEVER)  # fmt: skip
    ref = build_manifests(asked, image="i", command=["python", "x.py"])[0]["spec"]["runtimeRef"]
    assert ref == {"name": "tj", "kind": "TrainingRuntime", "apiGroup": "trainer.kubeflow.org"}
    runtime = {"metadata": {"name": "torch-distributed", "labels": {"trainer.kubeflow.org/framework": "torch"}},
               "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {"replicatedJobs": [
                   {"name": "node", "template": {"spec": {"template": {"spec": {"containers": [{"name": "node"}]}}}}}]}}}}  # fmt: skip
    copy = trainingruntime.build(asked, runtime, {"jupyter-ddl.io/managed": "true"})
    job = copy["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert job["backoffLimit"] == asked.effective_backoff_limit
    assert job["template"]["spec"]["restartPolicy"] == "Never"
    assert copy["spec"]["mlPolicy"] == runtime["spec"]["mlPolicy"]
    assert copy["metadata"]["labels"]["trainer.kubeflow.org/framework"] == "torch"


@pytest.mark.parametrize("policy", [RestartPolicy.EXIT_CODE, RestartPolicy.ALWAYS])
def test_a_policy_a_job_refuses_is_refused_in_one_line(policy):
    spec = JobSpec(name="tj", strategy="torch-ddp", target="TrainJob", replicas={"Node": 1},
                   restart_policy=policy)  # fmt: skip
    with pytest.raises(ValidationError) as e:
        validate(spec)
    assert f"refuse {policy.value}" in str(e.value) and "Never or OnFailure" in str(e.value)


@pytest.mark.parametrize("release", ["v2.0.0", "v2.1.0", "v2.3.0"])
def test_trainjob_pods_opt_out_of_istio_on_every_release(make_backend, double, release):
    """Istio's classic sidecar never exits, so a pod that gets one never ends. Every
    TrainJob pod carries the opt-out: through the override field's pod metadata from
    v2.1, and on v2.0, whose ``podSpecOverrides`` has none, through a runtime of the
    job's own (§11.10)."""
    double.use_trainer(release)
    double.label_namespace({"istio-injection": "enabled"})
    b = make_backend()
    spec = JobSpec(name=name("mesh"), strategy="torch-ddp", target="TrainJob",
                   replicas={"Node": 1}, command=["sh", "-c", "echo trained"])  # fmt: skip
    b.submit(spec, build_bundle("pass\n"))
    events = watch(b, spec.name, timeout=30)
    pods = double.store.list(PODS, NAMESPACE, f"jobset.sigs.k8s.io/jobset-name={spec.name}")[0]
    assert pods and all(p["metadata"]["annotations"].get("sidecar.istio.io/inject") == "false"
                        and len(p["spec"]["containers"]) == 1 for p in pods), pods  # fmt: skip
    assert final_state(events) == JobState.SUCCEEDED
    if release == "v2.0.0":  # pod metadata only through the runtime
        ref = double.store.get("trainer.kubeflow.org/v1alpha1/trainjobs", NAMESPACE, spec.name)
        assert ref["spec"]["runtimeRef"]["kind"] == "TrainingRuntime"
        assert all(p["metadata"]["labels"].get("jupyter-ddl.io/managed") == "true" for p in pods)
