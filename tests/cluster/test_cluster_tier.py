"""The real tier (`scripts/cluster`): a control plane built from Kubernetes' own modules
and the Kubeflow operators that built, as local processes.

Selected with `-m cluster` (the default run leaves it out: a cold `up` builds Kubernetes
from source, which takes many minutes). Needs Linux, root, Go and the Go module proxy.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.support import require

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "scripts" / "cluster"
STATE = ROOT / ".cluster"
KUBECONFIG = STATE / "kubeconfig"
ADMIN = STATE / "admin.kubeconfig"
K8S_VERSION = "v1.36.3"
NAMESPACE = "notebook"
OPERATORS = {
    # binary in .cluster/bin -> the name `scripts/cluster status` gives its process
    "mpi-operator": "mpi-operator",
    "training-operator": "training-operator",
}

pytestmark = [
    pytest.mark.cluster,
    # a cold first `up` builds kube-apiserver, the controller manager and the operators
    pytest.mark.timeout(5400),
    pytest.mark.skipif(sys.platform != "linux", reason="the tier runs on Linux only"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the tier needs root (private mount namespaces)"),
]


def run(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, check=check, timeout=timeout)


def kubectl(
    *args: str, kubeconfig: Path = KUBECONFIG, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return run("kubectl", "--kubeconfig", str(kubeconfig), *args, check=check)


def create(manifest: str) -> subprocess.CompletedProcess[str]:
    """``kubectl create -f -`` as the notebook user in its namespace; the caller checks."""
    return subprocess.run(
        ["kubectl", "--kubeconfig", str(KUBECONFIG), "-n", NAMESPACE, "create", "-f", "-"],
        input=manifest,
        capture_output=True,
        text=True,
        timeout=60,
    )


def built(binary: str) -> None:
    """An operator that did not build skips its checks here and fails them in CI."""
    if not (STATE / "bin" / binary).exists():
        require._missing(f"{binary} (it did not build: .cluster/logs/build-{binary}.log)")


def pids() -> dict[str, int]:
    """The processes the tier recorded, by name."""
    run_dir = STATE / "run"
    if not run_dir.is_dir():
        return {}
    return {p.stem: int(p.read_text()) for p in run_dir.glob("*.pid")}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for every purpose here
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def group_members(groups: set[int]) -> list[str]:
    """Live processes whose process group is one of GROUPS, as 'pid command'."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ")[:120]
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) in groups:
            found.append(f"{proc.name} {cmd.decode(errors='replace')}")
    return found


@pytest.fixture(scope="module")
def tier():
    up = run(str(CLUSTER), "up", check=False, timeout=5000)
    assert up.returncode == 0, (
        f"scripts/cluster up failed:\n{up.stdout[-3000:]}\n{up.stderr[-3000:]}"
    )
    assert f"export KUBECONFIG={KUBECONFIG}" in up.stdout
    started = pids()
    yield started
    run(str(CLUSTER), "down", check=False)


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


def wait_for(what: str, check, seconds: float = 120):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(1)
    raise AssertionError(f"{what}: not within {seconds} s")


POD = """
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: python:3.11
    command: [python3, -c, "import os; print('line', os.environ['WHO'])"]
    env: [{{name: WHO, value: notebook}}]
"""


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


def test_down_leaves_nothing_behind(tier):
    started = pids()
    assert started, "up recorded no processes"
    down = run(str(CLUSTER), "down")
    assert down.returncode == 0
    assert [n for n, p in started.items() if alive(p)] == []
    # nor anything a process left in its group (an operator's certificate loop)
    assert group_members(set(started.values())) == []
    assert (
        not (STATE / "run").exists()
        and not (STATE / "etcd").exists()
        and not (STATE / "pki").exists()
    )
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(STATE) not in mounts
    assert "k8s-webhook-server" not in mounts
    netns = run("ip", "netns", "list", check=False).stdout
    assert "jddl" not in netns
    veths = run("ip", "-o", "link", "show", "type", "veth", check=False).stdout
    assert "jddl" not in veths
    # nothing listens on the tier's ports any more
    listening = run("ss", "-ltnH", check=False).stdout
    for port in (6443, 23790, 10257, 10259):
        assert f"127.0.0.1:{port} " not in listening
