"""What every real-tier test shares: the paths, the tier's processes, kubectl as the
notebook user or the admin. The `tier` fixture (conftest.py) brings the tier up once per
session; test_zz_down.py, last in the folder, takes it down and checks what is left.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.image.registries import Registry, start_registry
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
    "scheduler-plugins": "gang-scheduler",
}

#: the Trainer release the tier runs (scripts/cluster reads the same variable)
TRAINER = os.environ.get("CLUSTER_TRAINER", "v2.3.0")
#: a test scripts/test runs on each Trainer release the tier builds (v2.3.0, then v2.0.0)
EVERY_TRAINER = pytest.mark.every_trainer

# every real-tier module sets `pytestmark = MARKS`
MARKS = [
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
    """Live processes whose process group is one of GROUPS, as 'pid command' (one
    exiting, its command line already gone, is left out)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ")[:120]
        except OSError:
            continue
        # a process being killed has no command line left before it turns zombie
        if fields[0] not in ("Z", "X") and int(fields[2]) in groups and cmd.strip():
            found.append(f"{proc.name} {cmd.decode(errors='replace')}")
    return found


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


@contextmanager
def listed_registry(auth: str, folder: Path, *tools: str) -> Iterator[Registry]:
    """A docker-registry on 127.0.0.1 (``auth`` as ``start_registry`` takes it) that the
    node agent pulls from while it runs: listed in ``.cluster/registries``, which the
    agent reads at each pull, and unlisted after."""
    for name in ("docker-registry", "skopeo", *tools):
        require.executable(name)
    listed = STATE / "registries"
    reg = start_registry(auth, folder)
    line = f"http://{reg.host}\n"
    with open(listed, "a") as f:
        f.write(line)
    try:
        yield reg
    finally:
        kept = [ln for ln in listed.read_text().splitlines(True) if ln != line]
        if kept:
            listed.write_text("".join(kept))
        else:
            listed.unlink()
        reg.stop()
