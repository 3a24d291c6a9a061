"""Submit details: connection and namespace choice, the ConfigMap and Secret (owned by
the job, never values in the manifest), Kubeflow notebook PodDefaults and PVCs, GPU
warnings, gang scheduling, CPU/memory from metrics.k8s.io, listing by notebook."""

from __future__ import annotations

import json
import threading
import uuid

import pytest

from jupyter_ddl.backends.kubernetes.connection import connect
from jupyter_ddl.config import Config
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.errors import BackendUnavailable
from jupyter_ddl.manifests import CODE_DIR
from jupyter_ddl.models import EventKind, GangScheduling, JobSpec, JobState, Resources, VolumeMount

RUN_CELL = ["python", "-u", f"{CODE_DIR}/cell.py"]
PYTORCHJOBS = "kubeflow.org/v1/pytorchjobs"


def job(**fields) -> JobSpec:
    base = {
        "name": f"s-{uuid.uuid4().hex[:6]}",
        "strategy": "torch-ddp",
        "replicas": {"Master": 1, "Worker": 1},
        "command": RUN_CELL,
    }
    return JobSpec(**{**base, **fields})


def watch_all(backend, name: str, timeout: float = 30.0):
    stop = threading.Event()
    t = threading.Timer(timeout, stop.set)
    t.start()
    try:
        return list(backend.watch(name, stop=stop))
    finally:
        t.cancel()


def test_connection_context_and_namespace_precedence(double, tmp_path, monkeypatch):
    kc = double.kubeconfig(tmp_path / "kc", contexts={"other": "team-b"})
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert connect(Config(), kubeconfig=str(kc), sa_dir=tmp_path).namespace == "team-a"
    assert (
        connect(Config(kube_context="other"), kubeconfig=str(kc), sa_dir=tmp_path).namespace
        == "team-b"
    )
    (tmp_path / "namespace").write_text("kubeflow-user\n")  # a Kubeflow profile's pod
    assert connect(Config(), kubeconfig=str(kc), sa_dir=tmp_path).namespace == "kubeflow-user"
    assert (
        connect(Config(namespace="mine"), kubeconfig=str(kc), sa_dir=tmp_path).namespace == "mine"
    )
    with pytest.raises(BackendUnavailable) as e:
        connect(Config(kube_context="nope"), kubeconfig=str(kc), sa_dir=tmp_path)
    assert "double, other" in str(e.value)
    with pytest.raises(BackendUnavailable):
        connect(Config(), kubeconfig=str(tmp_path / "missing"), sa_dir=tmp_path)


def test_secret_env_reaches_pods_by_reference_and_objects_go_with_the_job(make_backend, double):
    b = make_backend()
    b._environ = {"WANDB_API_KEY": "s3cr3t-value"}
    cell = "import os, hashlib\nprint('key sha', hashlib.sha256(os.environ['WANDB_API_KEY'].encode()).hexdigest()[:8], flush=True)\n"
    spec = job(secret_env=["WANDB_API_KEY"], replicas={"Master": 1})
    b.submit(spec, build_bundle(cell))
    stored = double.store.get(PYTORCHJOBS, "team-a", spec.name)
    assert "s3cr3t-value" not in json.dumps(stored)
    env = stored["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0][
        "env"
    ]
    assert {
        "name": "WANDB_API_KEY",
        "valueFrom": {"secretKeyRef": {"name": f"{spec.name}-secrets", "key": "WANDB_API_KEY"}},
    } in env
    events = watch_all(b, spec.name)
    import hashlib

    want = hashlib.sha256(b"s3cr3t-value").hexdigest()[:8]
    assert f"key sha {want}" in [e.log.text for e in events if e.kind == EventKind.LOG]
    uid = stored["metadata"]["uid"]
    for rid in ("core/v1/configmaps", "core/v1/secrets"):
        obj = double.store.get(
            rid, "team-a", f"{spec.name}-code" if "config" in rid else f"{spec.name}-secrets"
        )
        assert obj["metadata"]["ownerReferences"][0]["uid"] == uid
    cm = double.store.get("core/v1/configmaps", "team-a", f"{spec.name}-code")
    assert "cell.py" in cm["data"] and "s3cr3t" not in json.dumps(cm)
    b.delete(spec.name)
    assert double.store.get("core/v1/configmaps", "team-a", f"{spec.name}-code") is None
    assert double.store.get("core/v1/secrets", "team-a", f"{spec.name}-secrets") is None
    delete = [p for m, p in double.requests("DELETE") if spec.name in p]
    assert delete, "the job was never deleted through the API"


def test_kubeflow_notebook_poddefault_labels_and_pvc_by_name(make_backend, double, monkeypatch):
    monkeypatch.setenv("NB_PREFIX", "/notebook/team-a/nb")
    monkeypatch.setenv("HOSTNAME", "nb-0")
    double.store.create("core/v1/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "nb-0", "namespace": "team-a", "labels": {"access-ml-pipeline": "true", "notebook-name": "nb"}},
        "spec": {"containers": [{"name": "nb", "image": "jupyter", "volumeMounts": [{"name": "ws", "mountPath": "/home/jovyan"}]}],
                 "volumes": [{"name": "ws", "persistentVolumeClaim": {"claimName": "nb-workspace"}}]},
        "status": {"phase": "Running"}})  # fmt: skip
    double.store.create("kubeflow.org/v1alpha1/poddefaults", {"apiVersion": "kubeflow.org/v1alpha1", "kind": "PodDefault",
        "metadata": {"name": "access-ml-pipeline", "namespace": "team-a"},
        "spec": {"selector": {"matchLabels": {"access-ml-pipeline": "true"}}}})  # fmt: skip
    b = make_backend()
    spec = job(volumes=[VolumeMount(claim_name="nb-workspace", mount_path="")])
    b.submit(spec, build_bundle("print('hi')\n"))
    stored = double.store.get(PYTORCHJOBS, "team-a", spec.name)
    tmpl = stored["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    assert tmpl["metadata"]["labels"]["access-ml-pipeline"] == "true"
    assert "notebook-name" not in tmpl["metadata"]["labels"]  # only what a PodDefault selects on
    mounts = tmpl["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "data-0", "mountPath": "/home/jovyan"} in mounts
    assert {"name": "data-0", "persistentVolumeClaim": {"claimName": "nb-workspace"}} in tmpl[
        "spec"
    ]["volumes"]
    b.cancel(spec.name)


def test_gpu_warning_gang_podgroup_and_its_waiting_reason(make_backend, double):
    double.catalog.crds.append("PodGroup/v1beta1")
    double.add_node("gpu-node", gpus=1)
    b = make_backend()
    spec = job(default_resources=Resources(gpu=2), gang=GangScheduling(scheduler="volcano", queue="research"),
               command=["python", "-c", "import time; time.sleep(60)"])  # fmt: skip
    double.scenario.unschedulable[spec.name] = (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    )
    b.submit(spec, build_bundle("pass\n"))
    pg = double.store.get("scheduling.volcano.sh/v1beta1/podgroups", "team-a", spec.name)
    assert (
        pg["spec"]["queue"] == "research"
        and pg["metadata"]["ownerReferences"][0]["name"] == spec.name
    )
    stored = double.store.get(PYTORCHJOBS, "team-a", spec.name)
    assert (
        stored["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["schedulerName"]
        == "volcano"
    )
    double.store.create("core/v1/events", {"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{spec.name}.pg", "namespace": "team-a"}, "type": "Warning", "reason": "Unschedulable",
        "involvedObject": {"kind": "PodGroup", "name": spec.name, "namespace": "team-a"},
        "message": "2/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable"})  # fmt: skip
    stop = threading.Event()
    timer = threading.Timer(30, stop.set)  # fail, not hang, if a reason never comes
    timer.daemon = True
    timer.start()
    seen = []
    # the PodGroup's own status says "gang scheduling not satisfied" too, and may come
    # before the event: wait for every line asserted below, not the first of its kind
    wanted = ("largest node has 1 allocatable", "2/2 tasks in gang unschedulable", "warning:")
    for ev in b.watch(spec.name, stop=stop):
        if ev.kind == EventKind.WAITING:
            seen.append(ev.message)
        if all(any(w in m for m in seen) for w in wanted):
            stop.set()
    assert any(m.startswith("warning:") for m in seen), seen
    assert any("largest node has 1 allocatable" in m for m in seen), seen
    assert any("2/2 tasks in gang unschedulable" in m for m in seen), seen
    assert b.capabilities().gpus == 1
    b.cancel(spec.name)


def test_cpu_and_memory_from_metrics_api_and_list_by_notebook(make_backend, double):
    b = make_backend()
    cell = "import time\nfor i in range(15):\n    print('busy', i, flush=True)\n    sum(range(200000))\n    time.sleep(0.1)\n"
    spec = job(replicas={"Master": 1}, notebook="work/train.ipynb")
    b.submit(spec, build_bundle(cell))
    events = watch_all(b, spec.name)
    samples = [e for e in events if e.kind == EventKind.RESOURCE]
    assert samples and samples[0].replica == "master-0"
    assert samples[-1].metrics["memory_bytes"] > 1e6 and samples[-1].metrics["cpu"] >= 0
    assert events[-1].status.state == JobState.SUCCEEDED
    assert [j.name for j in b.list(notebook="work/train.ipynb")] == [spec.name]
    assert b.list(notebook="other.ipynb") == []
    assert b.capabilities().resource_metrics


def test_no_resource_events_without_metrics_api(make_backend, double):
    double.catalog.metrics = False
    b = make_backend()
    spec = job(replicas={"Master": 1})
    b.submit(spec, build_bundle("import time\nprint('x', flush=True)\ntime.sleep(1.5)\n"))
    events = watch_all(b, spec.name)
    assert not [e for e in events if e.kind == EventKind.RESOURCE]
    assert not b.capabilities().resource_metrics


def test_a_gang_job_without_the_right_to_patch_podgroups_is_refused_before_anything(
    make_backend, double
):
    """The PodGroup is made owned by the job by a patch once the job exists; a Role
    that lets the user create PodGroups but not patch them would leave the group behind
    when the job is deleted (seen on the real tier), so pre-flight names it."""
    double.catalog.crds.append("PodGroup/v1alpha1")
    double.state.denied |= {("patch", "podgroups")}
    b = make_backend()
    spec = job(gang=GangScheduling(scheduler="scheduler-plugins"))
    with pytest.raises(Exception) as e:
        b.submit(spec, build_bundle("pass\n"))
    text = str(e.value)
    assert "patch podgroups" in text and "\n" not in text, text
    assert double.store.get("scheduling.x-k8s.io/v1alpha1/podgroups", "team-a", spec.name) is None
