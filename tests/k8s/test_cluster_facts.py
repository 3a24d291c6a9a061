"""What the product reads from the cluster before it writes, against the API double:
the Trainer release (its public ConfigMap, its CRD, or a strict create that tells), the
runtime a TrainJob names, strict field validation on every create, the PodGroup's
place in the order of writes, the namespace a job lives in, and how a list of
kubeconfig files is merged."""

from __future__ import annotations

import json
import threading
import uuid

import pytest

from jupyter_ddl.backends.kubernetes.connection import connect
from jupyter_ddl.config import Config
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.errors import DDLError
from jupyter_ddl.manifests import ANNOTATION_SPEC, CODE_DIR
from jupyter_ddl.models import EventKind, GangScheduling, JobSpec, JobState

from .apidouble import NAMESPACE

RUN_CELL = ["python", "-u", f"{CODE_DIR}/cell.py"]
TRAINJOBS = "trainer.kubeflow.org/v1alpha1/trainjobs"


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def trainjob(prefix: str = "tj", **fields) -> JobSpec:
    return JobSpec(name=name(prefix), strategy="torch-ddp", target="TrainJob",
                   replicas={"Node": 1}, command=RUN_CELL, **fields)  # fmt: skip


def written_for(double, job: str) -> str:
    stored = double.store.get(TRAINJOBS, NAMESPACE, job)
    return json.loads(stored["metadata"]["annotations"][ANNOTATION_SPEC])["backend_options"][
        "trainer_release"
    ]


def stopper(seconds: float) -> threading.Event:
    """An event set after ``seconds`` (a test fails rather than hangs)."""
    stop = threading.Event()
    timer = threading.Timer(seconds, stop.set)
    timer.daemon = True
    timer.start()
    return stop


def configmaps(double) -> list[str]:
    return [c["metadata"]["name"] for c in double.store.list("core/v1/configmaps", NAMESPACE)[0]]


@pytest.mark.parametrize(
    ("release", "field", "found"),
    [("v2.3.0", "runtimePatches", "v2.3.0"),  # its public ConfigMap says so
     ("v2.2.0", "runtimePatches", "v2.2.0"),
     ("v2.1.0", "podTemplateOverrides", "v2.1.0"),  # no ConfigMap: its CRD's fields
     ("v2.0.0", "podSpecOverrides", "v2.0.0")],
)  # fmt: skip
def test_the_trainjob_is_written_for_the_release_the_cluster_runs(
    backend, double, release, field, found
):
    double.use_trainer(release)
    spec = trainjob()
    backend.submit(spec, build_bundle("print('hi')\n"))
    assert field in double.store.get(TRAINJOBS, NAMESPACE, spec.name)["spec"]
    assert written_for(double, spec.name) == found


def test_an_assumed_release_falls_back_when_the_cluster_refuses_its_field(backend, double):
    """Kubeflow 1.11 ships Trainer v2.1.0, which publishes no version, and a notebook's
    account may not read CRDs: the newest release is assumed, the strict create is
    refused for ``spec.runtimePatches`` (changing nothing) and v2.1's shape is sent."""
    double.use_trainer("v2.1.0")
    double.state.denied.add(("get", "customresourcedefinitions"))
    spec = trainjob()
    backend.submit(spec, build_bundle("print('fell back', flush=True)\n"))
    posts = double.requests("POST", "/trainjobs")
    assert len(posts) == 2 and all("fieldValidation=Strict" in p for _, p in posts)
    assert written_for(double, spec.name) == "v2.1.0"
    stop = stopper(40)
    events = list(backend.watch(spec.name, stop=stop))
    stop.set()
    assert "fell back" in [e.log.text for e in events if e.kind == EventKind.LOG]


def test_a_release_the_cluster_does_not_run_is_refused_in_one_line(make_backend, double):
    double.use_trainer("v2.1.0")
    b = make_backend(trainer_release="v2.3.0")
    spec = trainjob()
    with pytest.raises(DDLError) as e:
        b.submit(spec, build_bundle("pass\n"))
    msg = str(e.value)
    assert "spec.runtimePatches" in msg and "Trainer v2.3.0, from config" in msg
    assert "trainer_release" in msg and "\n" not in msg
    assert f"{spec.name}-code" not in configmaps(double)  # nothing left behind


def test_every_create_asks_for_strict_field_validation(backend, double, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "x")
    double.catalog.crds.append("PodGroup/v1beta1")
    spec = JobSpec(name=name("strict"), strategy="torch-ddp", replicas={"Master": 1},
                   command=RUN_CELL, secret_env=["HF_TOKEN"],
                   gang=GangScheduling(scheduler="volcano"))  # fmt: skip
    backend.submit(spec, build_bundle("print('ok')\n"))
    posts = [p for _, p in double.requests("POST") if "selfsubjectaccessreviews" not in p]
    kinds = [p.split("?")[0].rsplit("/", 1)[-1] for p in posts]
    # the pods' ConfigMap and Secret, and the gang's PodGroup, exist before the job
    # (created side by side, in any order among themselves)
    assert sorted(kinds[:3]) == ["configmaps", "podgroups", "secrets"], posts
    assert kinds[3:] == ["pytorchjobs"], posts
    assert all("fieldValidation=Strict" in p for p in posts), posts


def test_a_runtime_the_cluster_lacks_is_refused_naming_those_it_has(backend, double):
    spec = trainjob(runtime_ref="torch-distributed-custom")
    with pytest.raises(DDLError) as e:
        backend.submit(spec, build_bundle("pass\n"))
    msg = str(e.value)
    assert "torch-distributed-custom" in msg and "\n" not in msg
    assert msg.endswith("it has deepspeed-distributed, torch-distributed")
    assert double.requests("POST", "/trainjobs") == [] and f"{spec.name}-code" not in configmaps(
        double
    )


def test_a_job_in_another_namespace_is_cancelled_and_deleted_there(backend, double):
    double.store.create("core/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": "team-b"}})  # fmt: skip
    spec = JobSpec(name=name("nsb"), strategy="torch-ddp", replicas={"Master": 1, "Worker": 0},
                   command=["python", "-c", "print('up', flush=True); import time; time.sleep(30)"],
                   namespace="team-b")  # fmt: skip
    handle = backend.submit(spec, build_bundle("pass\n"))
    assert handle.namespace == "team-b"
    stop = stopper(20)
    for ev in backend.watch(spec.name, stop=stop):
        if ev.kind == EventKind.LOG and ev.log.text == "up":
            break
    stop.set()
    assert [line.text for line in backend.logs(spec.name)] == ["up"]
    assert backend.cancel(spec.name).state == JobState.CANCELLED
    assert double.store.get("kubeflow.org/v1/pytorchjobs", "team-b", spec.name)["spec"][
        "runPolicy"
    ]["suspend"]
    backend.delete(spec.name)
    assert double.store.get("kubeflow.org/v1/pytorchjobs", NAMESPACE, spec.name) is None


def test_kubeconfig_files_merge_as_kubectl_merges_them(double, tmp_path, monkeypatch):
    """kubectl takes ``current-context`` from the first file that sets it (the client's
    own merger lets the last one win); inside a pod a set ``KUBECONFIG`` wins over the
    in-cluster config."""
    both = double.kubeconfig(tmp_path / "both", contexts={"other": "team-b"})
    first = tmp_path / "first"
    first.write_text("apiVersion: v1\nkind: Config\ncurrent-context: other\n")
    monkeypatch.setenv("KUBECONFIG", f"{first}:{both}")
    assert connect(Config(), sa_dir=tmp_path / "no-sa").namespace == "team-b"
    token = tmp_path / "sa"
    token.mkdir()
    (token / "token").write_text("not-a-token")
    (token / "namespace").write_text("kubeflow-user\n")
    monkeypatch.setattr("jupyter_ddl.backends.kubernetes.connection.SA_DIR", token)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")  # in a pod, with KUBECONFIG set
    conn = connect(Config(), sa_dir=token)
    assert not conn.in_cluster and conn.api.configuration.host == double.url
    conn.close()


def test_a_fall_back_to_v2_0_makes_the_runtime_that_carries_the_istio_opt_out(backend, double):
    """A v2.0 cluster whose release was only assumed gets its TrainJob on the second
    fallback, on a runtime of its own made then: v2.0 carries pod metadata only in a
    runtime (§11.10). Here the user may read the ClusterTrainingRuntime (an admin)."""
    double.use_trainer("v2.0.0")
    double.state.denied.add(("get", "customresourcedefinitions"))
    spec = trainjob()
    backend.submit(spec, build_bundle("print('old release', flush=True)\n"))
    assert written_for(double, spec.name) == "v2.0.0"
    job = double.store.get(TRAINJOBS, NAMESPACE, spec.name)
    ref = job["spec"]["runtimeRef"]
    assert ref["kind"] == "TrainingRuntime" and ref["name"] == spec.name, ref
    own = double.store.get("trainer.kubeflow.org/v1alpha1/trainingruntimes", NAMESPACE, spec.name)
    assert own is not None
    pods = own["spec"]["template"]["spec"]["replicatedJobs"]
    assert all(
        r["template"]["spec"]["template"]["metadata"]["annotations"]["sidecar.istio.io/inject"]
        == "false"
        for r in pods
    )


@pytest.mark.parametrize("code", ["en", "ko"])
def test_the_v2_0_warning_without_a_runtime_of_its_own_reads_in_the_learners_language(
    backend, double, code
):
    """On Trainer v2.0, where no TrainingRuntime may be made, the job still runs and the
    warning (kept in the job's annotation, shown by `%ddl` and the dashboard) is in the
    language the notebook chose."""
    from jupyter_ddl import i18n
    from jupyter_ddl.backends.kubernetes.status import ANNOTATION_WARNINGS

    double.use_trainer("v2.0.0")
    double.state.denied.add(("create", "trainingruntimes"))
    spec = trainjob()
    i18n.choose(code)
    try:
        handle = backend.submit(spec, build_bundle("print('old release', flush=True)\n"))
    finally:
        i18n.choose(None)
    notes = double.store.get(TRAINJOBS, NAMESPACE, spec.name)["metadata"]["annotations"]
    stored = json.loads(notes[ANNOTATION_WARNINGS])
    assert list(handle.warnings) == stored and len(stored) == 1, stored
    english = "its pods get no Istio opt-out" in stored[0]
    assert english == (code == "en"), stored
    assert "Istio" in stored[0] and "PodDefault" in stored[0] and "TrainingRuntime" in stored[0]


def test_the_gpu_warnings_read_in_the_learners_language(backend, double):
    """What pre-flight warns of (a replica asking more GPUs than any node has) is kept
    with the job and shown by `%ddl` and the dashboard: in the language chosen."""
    from jupyter_ddl import i18n
    from jupyter_ddl.models import Resources

    double.add_node("gpu-node", gpus=1)
    spec = JobSpec(name=name("gpus"), strategy="torch-ddp", replicas={"Master": 1, "Worker": 1},
                   command=RUN_CELL, default_resources=Resources(gpu=2))  # fmt: skip
    i18n.choose("ja")
    try:
        handle = backend.submit(spec, build_bundle("print('x')\n"))
    finally:
        i18n.choose(None)
    said = list(handle.warnings)
    assert len(said) == 3, said  # each role over the largest node, and the whole job
    assert all("Pending" in w and "GPU" in w and "allocatable" not in w for w in said), said
    assert any("最大のノードで割り当て可能なのは 1 個" in w for w in said), said
    backend.cancel(spec.name)


def test_on_v2_0_a_profile_user_who_cannot_read_the_runtime_is_told_why_pods_lack_the_opt_out(
    backend, double
):
    """Seen on the real tier: Trainer v2.0 lets a profile's owner read no
    ClusterTrainingRuntime (its read reaches them through a RoleBinding, which grants
    nothing cluster-scoped), so the job's own runtime cannot be copied even where it could
    be created. The job still runs, on the runtime it names, and the warning says which
    read is missing; from v2.2 on every authenticated user may read them."""
    double.use_trainer("v2.0.0")
    double.kubeflow_edit()
    double.state.denied.discard(("create", "trainingruntimes"))  # as the tier's notebook user
    double.state.denied.add(("get", "customresourcedefinitions"))
    spec = trainjob()
    handle = backend.submit(spec, build_bundle("print('old release', flush=True)\n"))
    assert written_for(double, spec.name) == "v2.0.0"
    ref = double.store.get(TRAINJOBS, NAMESPACE, spec.name)["spec"]["runtimeRef"]
    assert ref == {**ref, "kind": "ClusterTrainingRuntime", "name": "torch-distributed"}, ref
    assert double.store.list("trainer.kubeflow.org/v1alpha1/trainingruntimes", NAMESPACE)[0] == []
    said = " ".join(handle.warnings)
    assert "ClusterTrainingRuntime 'torch-distributed' cannot be read" in said, said
    assert "get on clustertrainingruntimes" in said and "Istio opt-out" in said, said
    # from v2.2 on the same user reads it (and the release is published: no fallback)
    double.use_trainer("v2.2.0")
    assert double.state.allowed("get", "clustertrainingruntimes")
