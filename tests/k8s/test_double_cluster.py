"""The API double behaves like the clusters users run, through the real client, with
no product code involved: the operators' own environment rules, pruning and
fieldValidation, webhook and quota refusals (and the operators' events about them),
read-only ConfigMap volumes, sidecars and sorted statuses, Multi-Attach, foreground
deletion, Job-controller pod names, backoff and ExitCode, Volcano gangs, no operator."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client, config

from .apidouble import NAMESPACE, ApiDouble
from .apidouble.container import read_only_mechanism

NS = NAMESPACE
PYTORCHJOBS = "kubeflow.org/v1/pytorchjobs"


@pytest.fixture
def api(kubeconfig):
    c = config.new_client_from_config(str(kubeconfig))
    yield c
    c.close()


def until(fn, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = fn()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def pytorchjob(
    name, workers=1, command=("python", "-c", "print('hi')"), policy="OnFailure", **spec
):
    tmpl = {"spec": {"containers": [{"name": "pytorch", "image": "img", "command": list(command)}]}}
    reps = {"Master": {"replicas": 1, "restartPolicy": policy, "template": tmpl}}
    if workers:
        reps["Worker"] = {"replicas": workers, "restartPolicy": policy, "template": tmpl}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name},
            "spec": {"pytorchReplicaSpecs": reps, **spec}}  # fmt: skip


def create(api, obj, plural, group="kubeflow.org", version="v1", **kw):
    return client.CustomObjectsApi(api).create_namespaced_custom_object(
        group, version, NS, plural, obj, **kw
    )


def env_of(double, pod):
    c = double.store.get("core/v1/pods", NS, pod)["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in c.get("env") or []}


def events(double, reason):
    return [e for e in double.store.list("core/v1/events", NS)[0] if e["reason"] == reason]


def test_pytorch_and_tf_environment_from_the_operators_rules(api, double):
    create(api, pytorchjob("pt", workers=2, nprocPerNode="2"), "pytorchjobs")
    until(lambda: double.store.get("core/v1/pods", NS, "pt-worker-1"), what="pods")
    master, w1 = env_of(double, "pt-master-0"), env_of(double, "pt-worker-1")
    port = master["MASTER_PORT"]
    assert master["MASTER_ADDR"] == "127.0.0.1" and w1["MASTER_PORT"] == port != "23456"
    assert (master["RANK"], w1["RANK"], w1["PET_NODE_RANK"]) == ("0", "2", "2")
    assert (w1["WORLD_SIZE"], w1["PET_NNODES"], w1["PET_NPROC_PER_NODE"]) == ("6", "3", "2")
    tf = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "tf"}, "spec": {"tfReplicaSpecs": {
        r: {"replicas": n, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i", "command": ["true"]}]}}}
        for r, n in (("Chief", 1), ("Worker", 2), ("PS", 1))}}}  # fmt: skip
    create(api, tf, "tfjobs")
    until(lambda: double.store.get("core/v1/pods", NS, "tf-worker-1"), what="tf pods")
    doc = env_of(double, "tf-worker-1")["TF_CONFIG"]
    parsed = json.loads(doc)
    assert list(parsed) == ["cluster", "task", "environment"] and list(parsed["cluster"]) == [
        "chief",
        "ps",
        "worker",
    ]
    assert (
        parsed["task"] == {"type": "worker", "index": 1} and len(parsed["cluster"]["worker"]) == 2
    )
    assert ", " not in doc  # Go's compact JSON


def test_unknown_fields_pruned_strict_refused_warn_warned(api, double):
    double.use_trainer("v2.1.0")
    tj = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "tj"},
          "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 1, "image": "i"},
                   "runtimePatches": [{"manager": "x"}]}}  # fmt: skip
    co = client.CustomObjectsApi(api)
    with pytest.raises(client.ApiException) as e:
        co.create_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1", NS, "trainjobs", tj,
                                           field_validation="Strict")  # fmt: skip
    assert e.value.status == 400
    assert (
        'strict decoding error: unknown field "spec.runtimePatches"'
        in json.loads(e.value.body)["message"]
    )
    _, code, headers = co.create_namespaced_custom_object_with_http_info(
        "trainer.kubeflow.org", "v1alpha1", NS, "trainjobs", {**tj, "metadata": {"name": "tj2"}},
        field_validation="Warn")  # fmt: skip
    assert code == 201 and 'unknown field \\"spec.runtimePatches\\"' in headers["Warning"]
    made = create(
        api, {**tj, "metadata": {"name": "tj3"}}, "trainjobs", "trainer.kubeflow.org", "v1alpha1"
    )
    assert "runtimePatches" not in made["spec"]  # silently dropped: the client asked nothing
    names = {r["metadata"]["name"] for r in co.list_cluster_custom_object(
        "trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes")["items"]}  # fmt: skip
    assert {"torch-distributed", "deepspeed-distributed"} <= names


def test_webhook_and_quota_refusals_are_403_with_their_message(api, double):
    bad = pytorchjob("two-masters")
    bad["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    with pytest.raises(client.ApiException) as e:
        create(api, bad, "pytorchjobs")
    assert e.value.status == 403
    assert json.loads(e.value.body)["message"].startswith(
        'admission webhook "validator.pytorchjob.training-operator.kubeflow.org" denied the request: '
    )
    double.quota("cm-quota", {"count/configmaps": "0"})
    with pytest.raises(client.ApiException) as e:
        client.CoreV1Api(api).create_namespaced_config_map(NS, {"metadata": {"name": "c"}})
    assert (
        e.value.status == 403
        and "exceeded quota: cm-quota, requested: count/configmaps=1" in e.value.body
    )
    double.policy.refuse("secrets", "no secrets here", webhook="validate.kyverno.svc-fail")
    with pytest.raises(client.ApiException) as e:
        client.CoreV1Api(api).create_namespaced_secret(NS, {"metadata": {"name": "s"}})
    assert json.loads(e.value.body)["message"] == (
        'admission webhook "validate.kyverno.svc-fail" denied the request: no secrets here'
    )


def test_refused_pods_become_each_operators_event(api, double):
    double.quota("pods", {"pods": "1"})
    create(api, pytorchjob("q", workers=1, command=("sleep", "30")), "pytorchjobs")
    ev = until(lambda: events(double, "FailedCreatePod"), what="FailedCreatePod")
    assert ev[0]["involvedObject"] == {"kind": "PyTorchJob", "name": "q", "namespace": NS}
    assert (
        ev[0]["message"].startswith('Error creating: pods "q-')
        and "exceeded quota: pods" in ev[0]["message"]
    )
    double.policy.refuse("pods", "pod creation is blocked", webhook="gatekeeper", match="mpi-")
    mpi = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "mpi"}, "spec": {
        "mpiReplicaSpecs": {r: {"replicas": 1, "template": {"spec": {"containers": [{"name": r.lower(), "image": "i"}]}}}
                            for r in ("Launcher", "Worker")}}}  # fmt: skip
    create(api, mpi, "mpijobs", version="v2beta1")
    ev = until(lambda: events(double, "MPIJobFailed"), what="MPIJobFailed")
    assert ev[0]["message"].startswith("worker pod created failed: ")
    double.policy.refusals.clear()
    double.policy.refuse("pods", "launchers are blocked", webhook="gatekeeper", match="-launcher")
    double.store.delete("core/v1/resourcequotas", NS, "pods")
    until(lambda: double.store.get("core/v1/pods", NS, "mpi-worker-0"), what="worker")
    ev = until(lambda: events(double, "FailedCreate"), what="FailedCreate on the launcher Job")
    assert (
        ev[0]["involvedObject"]["kind"] == "Job"
        and ev[0]["involvedObject"]["name"] == "mpi-launcher"
    )


def test_no_operator_means_no_status(kubeconfig, tmp_path):
    with ApiDouble(operators=False) as d:
        api = config.new_client_from_config(str(d.kubeconfig(tmp_path / "kc")))
        create(api, pytorchjob("lonely"), "pytorchjobs")
        time.sleep(1.0)
        assert "status" not in d.store.get(PYTORCHJOBS, NS, "lonely")
        assert d.store.list("core/v1/pods", NS)[0] == []
        api.close()


def test_configmap_volumes_are_read_only_and_emptydir_writable(api, double):
    if read_only_mechanism() == "none":
        pytest.skip("root without mount namespaces: read-only volumes cannot be enforced here")
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map(
        NS, {"metadata": {"name": "code"}, "data": {"main.py": "x = 1\n"}}
    )
    script = ("import os\nfor n, d in (('code', '.'), ('scratch', '/scratch')):\n    try:\n"
              "        open(os.path.join(d, 'checkpoint.pt'), 'w').write('w')\n        print(n, 'ok')\n"
              "    except OSError as e:\n        print(n, type(e).__name__, e.errno)\n")  # fmt: skip
    core.create_namespaced_pod(NS, {"metadata": {"name": "ro"}, "spec": {"restartPolicy": "Never",
        "containers": [{"name": "main", "image": "i", "workingDir": "/opt/code", "command": ["python", "-c", script],
                        "volumeMounts": [{"name": "code", "mountPath": "/opt/code"}, {"name": "tmp", "mountPath": "/scratch"}]}],
        "volumes": [{"name": "code", "configMap": {"name": "code"}}, {"name": "tmp", "emptyDir": {}}]}})  # fmt: skip
    until(lambda: core.read_namespaced_pod("ro", NS).status.phase == "Succeeded", what="pod end")
    lines = core.read_namespaced_pod_log("ro", NS).splitlines()
    if read_only_mechanism() == "mount":
        assert lines[0] == "code OSError 30"  # EROFS, as from a kubelet's read-only mount
    else:
        assert lines[0].startswith("code ") and lines[0] != "code ok"
    assert lines[1] == "scratch ok"


def test_sidecars_come_first_in_container_statuses(api, double):
    core = client.CoreV1Api(api)
    double.label_namespace({"istio-injection": "enabled"})
    pod = {"metadata": {"name": "meshed"}, "spec": {"restartPolicy": "Never",
           "containers": [{"name": "pytorch", "image": "i", "command": ["python", "-c", "print('trained')"]}]}}  # fmt: skip
    core.create_namespaced_pod(NS, pod)
    opted_out = {
        **pod,
        "metadata": {"name": "plain", "annotations": {"sidecar.istio.io/inject": "false"}},
    }
    core.create_namespaced_pod(NS, opted_out)
    done = until(
        lambda: (
            (p := core.read_namespaced_pod("meshed", NS)).status.container_statuses
            and p.status.container_statuses[-1].state.terminated
            and p
        )
    )
    assert [c.name for c in done.status.container_statuses] == ["istio-proxy", "pytorch"]
    assert done.status.container_statuses[1].state.terminated.exit_code == 0
    # Istio's classic sidecar never exits: the pod is never Succeeded
    assert done.status.phase == "Running" and done.status.container_statuses[0].state.running
    assert core.read_namespaced_pod_log("meshed", NS, container="pytorch").strip() == "trained"
    assert len(core.read_namespaced_pod("plain", NS).spec.containers) == 1


def test_rwo_claim_on_two_nodes_is_multi_attach(api, double):
    core = client.CoreV1Api(api)
    double.scenario.nodes = ["node-0", "node-1"]
    core.create_namespaced_persistent_volume_claim(NS, {"metadata": {"name": "ws"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})  # fmt: skip
    for name in ("a", "b"):
        core.create_namespaced_pod(NS, {"metadata": {"name": name}, "spec": {"containers": [
            {"name": "main", "image": "i", "command": ["sleep", "20"], "volumeMounts": [{"name": "ws", "mountPath": "/ws"}]}],
            "volumes": [{"name": "ws", "persistentVolumeClaim": {"claimName": "ws"}}]}})  # fmt: skip
        if name == "a":
            until(lambda: core.read_namespaced_pod("a", NS).status.phase == "Running")
    ev = until(lambda: events(double, "FailedAttachVolume"), what="Multi-Attach")
    assert ev[0]["involvedObject"]["name"] == "b" and "Multi-Attach error" in ev[0]["message"]
    assert "already used by pod(s) a" in ev[0]["message"]
    assert core.read_namespaced_pod("b", NS).status.phase == "Pending"


def test_foreground_delete_keeps_the_job_until_its_pods_are_gone(api, double):
    # The pods ignore SIGTERM and have a 5 s grace, so the kubelet takes that long to
    # stop them: the job must stay (marked) all that time, not only for the instant
    # a pod that dies on SIGTERM would give (a race CI lost once).
    job = pytorchjob("fg", workers=1, command=("sh", "-c", "trap '' TERM; sleep 30"))
    for rep in job["spec"]["pytorchReplicaSpecs"].values():
        rep["template"] = {"spec": {**rep["template"]["spec"], "terminationGracePeriodSeconds": 5}}
    create(api, job, "pytorchjobs")
    until(lambda: all(p["status"].get("phase") == "Running" for p in double.store.list("core/v1/pods", NS)[0])
          and len(double.store.list("core/v1/pods", NS)[0]) == 2, what="pods running")  # fmt: skip
    answer = client.CustomObjectsApi(api).delete_namespaced_custom_object(
        "kubeflow.org",
        "v1",
        NS,
        "pytorchjobs",
        "fg",
        body=client.V1DeleteOptions(propagation_policy="Foreground"),
    )
    # the API answers with the object as it keeps it: marked, held by the finalizer
    assert answer["metadata"]["deletionTimestamp"]
    assert "foregroundDeletion" in answer["metadata"]["finalizers"]
    held = double.store.get(PYTORCHJOBS, NS, "fg")
    assert held is not None and held["metadata"]["deletionTimestamp"]

    def gone_only_after_its_pods() -> bool:
        job_now = double.store.get(PYTORCHJOBS, NS, "fg")  # read first: pods go before it
        pods = double.store.list("core/v1/pods", NS)[0]
        assert job_now is not None or pods == [], "job removed while its pods remain"
        return job_now is None

    until(gone_only_after_its_pods, what="job gone")
    assert double.store.list("core/v1/pods", NS)[0] == []


def test_deepspeed_v23_layout_and_job_controller_names(api, double):
    tj = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "ds"},
          "spec": {"runtimeRef": {"name": "deepspeed-distributed"},
                   "trainer": {"numNodes": 3, "image": "mine:1", "command": ["sleep", "20"]}}}  # fmt: skip
    create(api, tj, "trainjobs", "trainer.kubeflow.org", "v1alpha1")
    pods = until(
        lambda: len(ps := double.store.list("core/v1/pods", NS)[0]) == 3 and ps, what="3 pods"
    )
    by = {p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"]: p for p in pods}
    nodes = [
        p
        for p in pods
        if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "node"
    ]
    assert len(nodes) == 2  # runLauncherAsNode: the launcher is node 0
    assert by["launcher"]["spec"]["containers"][0]["image"] == "mine:1"
    assert {p["spec"]["containers"][0]["image"] for p in nodes} == {
        "ghcr.io/kubeflow/trainer/deepspeed-runtime"
    }
    name = by["launcher"]["metadata"]["name"]
    assert name.startswith("ds-launcher-0-0-") and len(name.rsplit("-", 1)[-1]) == 5
    assert by["launcher"]["spec"]["hostname"] == "ds-launcher-0-0"


def test_backoff_limit_is_reached_not_passed_and_exitcode_recreates(api, double, tmp_path):
    crash = pytorchjob(
        "bo",
        workers=0,
        command=("python", "-c", "import sys; sys.exit(1)"),
        runPolicy={"backoffLimit": 1},
    )
    double.scenario.restart_backoff = 0.5
    create(api, crash, "pytorchjobs")
    job = until(lambda: [c for c in (double.store.get(PYTORCHJOBS, NS, "bo").get("status") or {}).get("conditions", [])
                         if c["type"] == "Failed"], what="backoff failure")  # fmt: skip
    assert "backoff limit" in job[0]["message"]
    mark = tmp_path / "killed-once"
    # the kubelet turns "$$" into "$" ($(VAR) expansion), so the shell's $$ is written $$$$
    retry = pytorchjob("ec", workers=0, policy="ExitCode", command=(
        "sh", "-c", f"if [ -e {mark} ]; then exit 0; fi; touch {mark}; kill -TERM $$$$"))  # fmt: skip
    create(api, retry, "pytorchjobs")
    until(lambda: [c for c in (double.store.get(PYTORCHJOBS, NS, "ec").get("status") or {}).get("conditions", [])
                   if c["type"] == "Succeeded"], what="success after a retried exit code 143")  # fmt: skip
    with double.store.cond:
        made = [o for _, kind, rid, o in double.store.history
                if kind == "ADDED" and rid == "core/v1/pods" and o["metadata"]["name"] == "ec-master-0"]  # fmt: skip
    assert mark.exists() and len(made) == 2  # killed by SIGTERM once: deleted and made again
    assert double.store.get("core/v1/pods", NS, "ec-master-0")["spec"]["restartPolicy"] == "Never"


def test_volcano_waits_for_its_podgroup_and_rbac_can_deny_it(api, double):
    double.catalog.crds.append("PodGroup/v1beta1")
    job = pytorchjob("gang", workers=0)
    tmpl = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    tmpl["spec"]["schedulerName"] = "volcano"
    tmpl["metadata"] = {"annotations": {"scheduling.k8s.io/group-name": "gang"}}
    create(api, job, "pytorchjobs")
    ev = until(
        lambda: [e for e in events(double, "FailedScheduling") if "podgroup" in e["message"]]
    )
    assert ev[0]["involvedObject"]["name"] == "gang-master-0"
    assert double.store.get("core/v1/pods", NS, "gang-master-0")["status"]["phase"] == "Pending"
    double.kubeflow_edit()
    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "gang"},
          "spec": {"minMember": 1}}  # fmt: skip
    with pytest.raises(client.ApiException) as e:
        create(api, pg, "podgroups", "scheduling.volcano.sh", "v1beta1")
    assert e.value.status == 403
    double.state.denied.clear()
    create(api, pg, "podgroups", "scheduling.volcano.sh", "v1beta1")
    until(lambda: double.store.get("core/v1/pods", NS, "gang-master-0")["status"].get("phase") == "Succeeded",
          what="the gang ran once its group existed")  # fmt: skip
