"""The workshop's cluster lab (laptop-to-cluster.ipynb, section 7) executed headless in a
real kernel against the tier, in every language, as a learner whose teacher exported
the tier's notebook kubeconfig: a TFJob and a PyTorchJob Succeeded with every rank's
lines in their cells, the failing job Failed with its root cause in one line, the
slow one Cancelled, and no job object left behind. The same notebook without a
cluster (dry runs) is tests/notebooks/test_notebooks.py::test_laptop_to_cluster.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.tier import KUBECONFIG, MARKS, NAMESPACE, built, kubectl, wait_for
from tests.notebooks.conftest import LANGS, REPO, code_outputs, load_script, notebook_path
from tests.support.require import module

pytestmark = MARKS

ARTIFACTS = REPO / ".test-artifacts" / "cluster-lab"
KINDS = "tfjobs,pytorchjobs"
#: the CI tier stage runs every language: each must stay short
SECONDS_PER_LANGUAGE = 90


def _jobs() -> set[str]:
    """The TFJobs and PyTorchJobs of the notebook's namespace, as kind/name."""
    said = kubectl("-n", NAMESPACE, "get", KINDS, "-o", "json").stdout
    return {f"{o['kind']}/{o['metadata']['name']}" for o in json.loads(said)["items"]}


@pytest.fixture
def learner(tier, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The kernel's environment: the tier's notebook kubeconfig exported, nothing else
    of the cluster configured (the namespace is the kubeconfig's). Yields the jobs
    there before; afterwards every job the run left is deleted."""
    module("nbclient")
    module("ipykernel")
    built("training-operator")
    monkeypatch.setenv("KUBECONFIG", str(KUBECONFIG))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    monkeypatch.setenv("DDL_WORKSHOP_QUICK", "1")
    before = _jobs()
    yield before
    for job in sorted(_jobs() - before):
        kubectl("-n", NAMESPACE, "delete", job, "--wait=false", check=False)


def _errors(nb: Any, startswith: str) -> list[Any]:
    return [
        out
        for cell in nb.cells
        if cell.cell_type == "code" and cell.source.startswith(startswith)
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]


@pytest.mark.parametrize("lang", LANGS)
def test_the_cluster_lab_submits_follows_fails_and_cancels_real_jobs(learner, lang):
    runner = load_script("execute")
    start = time.monotonic()
    nb, outcome, _ = runner.execute(
        notebook_path("laptop-to-cluster", lang), out_dir=ARTIFACTS / lang, timeout=240
    )
    took = time.monotonic() - start
    print(f"{lang}/laptop-to-cluster on the tier: {took:.1f} s")  # shown with -s / -rP
    lab = outcome["cluster_lab"]
    assert "a cluster answers" in code_outputs(
        nb, "from jupyter_ddl import DDLError, default_manager"
    )
    assert lab["ran"] is True, lab
    assert lab["states"] == {
        "tfjob": "Succeeded",
        "pytorchjob": "Succeeded",
        "failing": "Failed",
        "cancelled": "Cancelled",
    }, lab
    # every rank's own line, in the cell that ran it
    tf_cell = code_outputs(nb, "%%distribute --strategy tf-multi-worker-mirrored --workers 2 --b")
    for worker in (0, 1):
        assert f"worker {worker} of 2: sum 2.0" in tf_cell, tf_cell[-3000:]
    torch_cell = code_outputs(
        nb, "%%distribute --strategy torch-ddp --replicas 2 --backend kubernetes --wait"
    )
    for rank in (0, 1):
        assert f"rank {rank} of 2: sum 3.0" in torch_cell, torch_cell[-3000:]
    # the failing job: one line naming the replica that failed first and its error
    failed = _errors(
        nb, "%%distribute --strategy torch-ddp --replicas 2 --backend kubernetes --restart"
    )
    assert len(failed) == 1 and len(failed[0]["traceback"]) == 1, failed
    said = failed[0]["evalue"]
    cause = "worker-0 · rank 1 failed first: FileNotFoundError: data/shard-1.pt is missing"
    assert cause in said, said
    record = code_outputs(
        nb, "%%distribute --strategy torch-ddp --replicas 2 --backend kubernetes --restart"
    )
    assert f"root cause: {cause}" in record, record[-3000:]
    cancel = code_outputs(nb, "import time\n\nslow_job = _ddl_job")
    assert cancel.split().count("Running") == 1 and cancel.rstrip().endswith("Cancelled"), cancel
    assert outcome["ok"] is True
    # the notebook's last lab cell deleted its four jobs (gone once their pods are)
    wait_for("the lab's jobs deleted", lambda: not (_jobs() - learner), seconds=30)
    assert took < SECONDS_PER_LANGUAGE, f"{lang}: {took:.0f} s"
