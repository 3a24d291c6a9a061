"""A secret in the kernel's environment reaches only the replicas that ask for it
(``--secret-env``), and its value lands nowhere: not in a job file, a log line, the
dry run, nor the saved notebook. A real kernel runs the notebook (nbclient)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from tests.support import require

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
SECRET = "nb-s3cr3t-5e1f-value"
OTHER = "kernel-only-7a2d-value"

PROBE = """
import os
for key in ("NB_SECRET_TOKEN", "OTHER_KERNEL_TOKEN"):
    print(key, "set" if key in os.environ else "unset", len(os.environ.get(key, "")), flush=True)
"""


def test_secret_env_reaches_only_the_replicas_that_ask_and_is_stored_nowhere(
    tmp_path, data_dir, monkeypatch
):
    require.module("nbclient")
    require.module("ipykernel")
    from nbclient import NotebookClient

    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("JUPYTER_DDL_WIDGETS", "0")
    monkeypatch.setenv("NB_SECRET_TOKEN", SECRET)
    monkeypatch.setenv("OTHER_KERNEL_TOKEN", OTHER)
    cells = [
        "%load_ext jupyter_ddl",
        "%%distribute --strategy tf-mirrored --secret-env NB_SECRET_TOKEN --wait --name asks\n"
        + PROBE,
        "%ddl logs asks\n%ddl status asks",
        "%%distribute --strategy tf-mirrored --wait --name silent\n" + PROBE,
        "%ddl logs silent",
        "%%distribute --strategy torch-ddp --secret-env NB_SECRET_TOKEN --dry-run --name dry\n"
        "print(1)",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    saved = tmp_path / "secrets.ipynb"
    nbformat.write(nb, saved)
    text = saved.read_text()

    logs_asks = "".join(o.get("text", "") for o in nb.cells[2].outputs)
    assert f"[worker-0] NB_SECRET_TOKEN set {len(SECRET)}" in logs_asks
    assert "[worker-0] OTHER_KERNEL_TOKEN unset 0" in logs_asks
    logs_silent = "".join(o.get("text", "") for o in nb.cells[4].outputs)
    assert "[worker-0] NB_SECRET_TOKEN unset 0" in logs_silent
    assert "[worker-0] OTHER_KERNEL_TOKEN unset 0" in logs_silent
    dry = json.dumps([o for o in nb.cells[5].outputs])
    assert "NB_SECRET_TOKEN" in dry and "secretKeyRef" in dry

    assert SECRET not in text and OTHER not in text
    for path in (data_dir / "jobs").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert SECRET.encode() not in data and OTHER.encode() not in data, path
