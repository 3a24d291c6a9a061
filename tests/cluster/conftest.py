"""The real tier, up once for every `-m cluster` test of the session."""

from __future__ import annotations

import os
import sys

import pytest

from tests.cluster.tier import CLUSTER, KUBECONFIG, MARKS, pids, run

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
