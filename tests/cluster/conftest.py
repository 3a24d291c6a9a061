"""The real tier, up once for every `-m cluster` test of the session."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.cluster.tier import ADMIN, CLUSTER, KUBECONFIG, MARKS, TRAINER, kubectl, pids, run

# `ip` (the checks that down removed every network namespace) lives in /usr/sbin, which a
# user's PATH may lack; scripts/cluster adds it the same way
if "/usr/sbin" not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


@pytest.fixture(scope="session")
def tier():
    # the pods' `python` is this interpreter (torch, jupyter_ddl) unless told otherwise
    os.environ.setdefault("CLUSTER_PYTHON", sys.executable)
    # logs rotate at the size the double uses too (referee.LOG_MAX_SIZE)
    os.environ.setdefault("CLUSTER_LOG_MAX_SIZE", str(64 * 1024))
    up = run(str(CLUSTER), "up", check=False, timeout=5000)
    assert up.returncode == 0, (
        f"scripts/cluster up failed:\n{up.stdout[-3000:]}\n{up.stderr[-3000:]}"
    )
    assert f"export KUBECONFIG={KUBECONFIG}" in up.stdout
    started = pids()
    yield started
    run(str(CLUSTER), "down", check=False)


@pytest.fixture(params=["double", pytest.param("real", marks=MARKS)])
def cluster(request, tmp_path):
    """A scenario's cluster: the API double, and the real tier that referees it (marked
    `cluster`, so the default run keeps the double only)."""
    from tests.cluster.referee import DoubleTier, RealTier

    if request.param == "real":
        request.getfixturevalue("tier")
        made = RealTier(tmp_path)
    else:
        made = DoubleTier(tmp_path)
    yield made
    made.close()


#: what Trainer v2.2 on binds to every authenticated user, and an admin of a v2.0
#: platform adds by hand: reading the ClusterTrainingRuntimes (v2.0's own read reaches a
#: profile's owner through a RoleBinding, which grants nothing cluster-scoped)
RUNTIME_READ = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: test-read-cluster-runtimes}
rules:
- apiGroups: [trainer.kubeflow.org]
  resources: [clustertrainingruntimes]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: test-read-cluster-runtimes}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: test-read-cluster-runtimes}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:authenticated"}
"""


@pytest.fixture
def runtimes_readable():
    """On v2.0, the read of ClusterTrainingRuntimes that a job's own runtime is copied
    from, granted to the notebook user as v2.2 on grants it (nothing to do from v2.2)."""
    if not TRAINER.startswith("v2.0."):
        yield
        return
    granted = subprocess.run(
        ["kubectl", "--kubeconfig", str(ADMIN), "apply", "-f", "-"],
        input=RUNTIME_READ, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert granted.returncode == 0, granted.stderr
    yield
    kubectl("delete", "clusterrolebinding,clusterrole", "test-read-cluster-runtimes",
            kubeconfig=ADMIN, check=False)  # fmt: skip
