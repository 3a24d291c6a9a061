"""The real tier (`scripts/cluster`): a control plane built from Kubernetes' own modules
and the Kubeflow operators that built, as local processes.

Selected with `-m cluster` (the default run leaves it out: a cold `up` builds Kubernetes
from source, which takes many minutes). Needs Linux, root, Go and the Go module proxy.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import uuid

from tests.cluster.tier import (
    ADMIN,
    CLUSTER,
    EVERY_TRAINER,
    K8S_VERSION,
    MARKS,
    NAMESPACE,
    OPERATORS,
    POD,
    STATE,
    alive,
    built,
    create,
    group_members,
    kubectl,
    pids,
    run,
    wait_for,
)

pytestmark = MARKS


def test_version_names_the_pinned_release(tier):
    out = json.loads(kubectl("version", "-o", "json").stdout)
    assert out["serverVersion"]["gitVersion"] == K8S_VERSION
    assert out["serverVersion"]["minor"] == K8S_VERSION.split(".")[1]


def test_second_up_reuses_what_runs(tier):
    # what runs now is kept; a process that ended since (a controller-runtime operator
    # may exit when its cert rotator refreshes the secret) is started again
    running = {name: pid for name, pid in pids().items() if alive(pid)}
    assert running, "nothing of the tier runs"
    again = run(str(CLUSTER), "up", timeout=600)
    assert "building" not in again.stdout
    after = pids()
    assert {n: after.get(n) for n in running} == running, "a second up restarted processes"
    assert all(alive(pid) for pid in after.values()), "a second up left a process down"


def test_a_scheduler_that_ends_is_started_again_and_schedules(tier):
    # kube-scheduler exits by design when an update contradicts its cache (it did after
    # an API server restart); the kubelet restarts its static pod, and the tier so
    binary = str(STATE / "bin" / "kube-scheduler")

    def scheduler() -> int | None:
        found = [int(m.split()[0]) for m in group_members({pids()["kube-scheduler"]})
                 if m.split()[1] == binary]  # fmt: skip
        return found[0] if found else None

    first = wait_for("kube-scheduler", scheduler, 10)
    os.kill(first, signal.SIGKILL)
    wait_for("kube-scheduler started again", lambda: (p := scheduler()) and p != first, 30)
    name = f"again-{uuid.uuid4().hex[:6]}"
    assert create(POD.format(name=name)).returncode == 0
    try:
        wait_for(f"{name} scheduled", lambda: kubectl(
            "-n", NAMESPACE, "get", "pod", name, "-o", "jsonpath={.spec.nodeName}").stdout, 60)  # fmt: skip
    finally:
        kubectl("-n", NAMESPACE, "delete", "pod", name, "--wait=false", check=False)


@EVERY_TRAINER
def test_crds_of_the_pinned_releases_are_installed(tier):
    crds = json.loads(kubectl("get", "crd", "-o", "json", kubeconfig=ADMIN).stdout)["items"]
    served = {
        c["metadata"]["name"]: [v["name"] for v in c["spec"]["versions"] if v["served"]]
        for c in crds
    }
    assert "v1" in served["tfjobs.kubeflow.org"]
    assert "v1" in served["pytorchjobs.kubeflow.org"]
    assert served["mpijobs.kubeflow.org"] == ["v2beta1"]
    assert "v1alpha1" in served["trainjobs.trainer.kubeflow.org"]
    assert "clustertrainingruntimes.trainer.kubeflow.org" in served
    assert "v1alpha2" in served["jobsets.jobset.x-k8s.io"]


TFJOB = """
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: {name}}}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: tensorflow
            image: python:3.11
            command: [python3, -c, "print('hello from {name}')"]
"""


def test_notebook_user_works_in_its_namespace_only(tier):
    name = f"t-{uuid.uuid4().hex[:8]}"
    made = create(TFJOB.format(name=name))
    assert made.returncode == 0, made.stderr
    got = json.loads(kubectl("-n", NAMESPACE, "get", "tfjob", name, "-o", "json").stdout)
    assert got["metadata"]["namespace"] == NAMESPACE
    assert kubectl("-n", NAMESPACE, "get", "pods").returncode == 0
    # the notebook's kubeconfig names its namespace, so a notebook that sets none works there
    said = kubectl("config", "view", "--minify", "-o", "jsonpath={..namespace}").stdout
    assert said == NAMESPACE, said
    # nothing cluster-wide, nothing in another namespace
    for args in (
        ["get", "tfjobs", "-A"],
        ["get", "nodes"],
        ["-n", "default", "get", "pods"],
        ["get", "crd"],
    ):
        denied = kubectl(*args, check=False)
        assert denied.returncode != 0, args
        assert "Forbidden" in denied.stderr and 'User "notebook"' in denied.stderr, denied.stderr
    kubectl("-n", NAMESPACE, "delete", "tfjob", name, "--wait=false")


def test_operators_that_built_are_running(tier):
    built = [b for b in OPERATORS if (STATE / "bin" / b).exists()]
    status = run(str(CLUSTER), "status").stdout
    for b in built:
        assert re.search(rf"^{OPERATORS[b]}: running", status, re.M), status
    assert "api: ready" in status


def test_mpi_operator_holds_its_lease(tier):
    built("mpi-operator")
    leases = kubectl("-n", "mpi-operator", "get", "lease", "-o", "name", kubeconfig=ADMIN).stdout
    assert leases.strip(), "mpi-operator took no lease: it never became leader"


def test_training_operator_webhook_validates(tier):
    """The operator's real webhook answers through the apiserver: a TFJob it refuses."""
    built("training-operator")
    # a valid object name, but not the DNS-1035 label the operator requires
    bad = TFJOB.format(name="9starts-with-a-digit")
    made = create(bad)
    assert made.returncode != 0
    assert "validator.tfjob.training-operator.kubeflow.org" in made.stderr, made.stderr


def test_a_pod_is_scheduled_run_and_its_log_read_through_the_apiserver(tier):
    name = f"p-{uuid.uuid4().hex[:8]}"
    made = create(POD.format(name=name))
    assert made.returncode == 0, made.stderr

    def phase():  # type: ignore[no-untyped-def]
        got = json.loads(kubectl("-n", NAMESPACE, "get", "pod", name, "-o", "json").stdout)
        return got["status"].get("phase") in ("Succeeded", "Failed") and got

    got = wait_for(f"pod {name} ends", phase)
    assert got["spec"]["nodeName"] == "node-0", "the scheduler did not bind it"
    assert got["status"]["phase"] == "Succeeded", got["status"]
    assert kubectl("-n", NAMESPACE, "logs", name).stdout == "line notebook\n"
    kubectl("-n", NAMESPACE, "delete", "pod", name, "--wait=true", "--timeout=60s")


def test_a_tfjob_runs_to_succeeded_under_the_real_operator(tier):
    built("training-operator")
    name = f"tf-{uuid.uuid4().hex[:8]}"
    made = create(TFJOB.format(name=name))
    assert made.returncode == 0, made.stderr

    def succeeded():  # type: ignore[no-untyped-def]
        got = json.loads(kubectl("-n", NAMESPACE, "get", "tfjob", name, "-o", "json").stdout)
        conds = {c["type"]: c["status"] for c in (got.get("status") or {}).get("conditions") or []}
        return conds.get("Succeeded") == "True" or conds.get("Failed") == "True"

    wait_for(f"TFJob {name} ends", succeeded, 180)
    got = json.loads(kubectl("-n", NAMESPACE, "get", "tfjob", name, "-o", "json").stdout)
    assert got["status"]["conditions"][-1]["type"] == "Succeeded", got["status"]
    logs = kubectl("-n", NAMESPACE, "logs", f"{name}-worker-0", check=False)
    assert f"hello from {name}" in logs.stdout, logs.stderr


SLEEPER = """
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: python:3.11
    command: [python3, -c, "import time; time.sleep(300)"]
"""


def _pod_networks() -> set[str]:
    return {
        ln.split()[0]
        for ln in run("ip", "netns", "list").stdout.splitlines()
        if ln.startswith("jddl")
    }


def test_a_second_tier_beside_a_running_one_is_refused_and_takes_nothing_down(tier, tmp_path):
    """Another checkout's `up` while this tier runs: one line naming the taken port and
    the way out, before it builds or starts anything; its `down` then leaves this tier's
    pods on the network (its own agent never ran)."""
    name = f"p-{uuid.uuid4().hex[:8]}"
    assert create(SLEEPER.format(name=name)).returncode == 0
    try:
        wait_for(
            f"{name} running",
            lambda: (
                json.loads(kubectl("-n", NAMESPACE, "get", "pod", name, "-o", "json").stdout)[
                    "status"
                ].get("phase")
                == "Running"
            ),
        )
        networks = _pod_networks()
        assert networks, "a running pod has no network namespace"
        other = tmp_path / "checkout"
        shutil.copytree(CLUSTER.parent, other / "scripts")
        up = run(str(other / "scripts" / "cluster"), "up", check=False, timeout=300)
        assert up.returncode != 0
        said = [ln for ln in up.stderr.splitlines() if ln.startswith("cluster: ")]
        assert len(said) == 1 and "is taken" in said[0] and "scripts/cluster down" in said[0], (
            up.stderr
        )
        assert "building" not in up.stdout and not (other / ".cluster" / "pki").exists()
        down = run(str(other / "scripts" / "cluster"), "down", check=False, timeout=120)
        assert down.returncode == 0, down.stderr
        assert _pod_networks() >= networks, (
            "the other checkout's down took this tier's pods off the network"
        )
        assert kubectl("get", "--raw", "/readyz").stdout == "ok"
    finally:
        kubectl("-n", NAMESPACE, "delete", "pod", name, "--wait=false", check=False)
