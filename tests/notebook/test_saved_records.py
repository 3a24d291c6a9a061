"""What a saved notebook keeps of its jobs: notebooks run by nbclient in a real kernel
(with ipywidgets, so the live dashboards are widgets) on the real local backend, then
saved, read back and exported with ``jupyter nbconvert --to html``.

Every job a cell started, from flags or from the form, leaves its record in that cell:
widget-free HTML with a text fallback (state, root cause, replica table, inline SVG
charts, last lines, ``%ddl attach NAME``), in place of its live widget, once."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.support import require

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

REPO = Path(__file__).resolve().parents[2]
WIDGET = "application/vnd.jupyter.widget-view+json"

TRAIN = """\
import time
for step in range(6):
    report(step=step, loss=10.0 ** (1 - 2 * step))
    print(f"rank {rank} step {step}", flush=True)
    time.sleep(0.1)
"""

CRASH = """\
import torch, torch.distributed as dist
print(f"rank {rank} starting", flush=True)
if rank == 1:
    raise ValueError("boom")
dist.all_reduce(torch.ones(1))
"""

CLICK = """\
form = get_ipython().find_magic("ddl").__self__.last_form
form.framework.value = "pytorch"
form.strategy.value = "torch-ddp"
form.replicas.value = 2
job = form.args().name
form.submit_button.click()
form.submit_button.click()  # a double click: one job
"""


@pytest.fixture
def kernel_env(data_dir, monkeypatch):
    require.module("nbclient")
    require.module("ipywidgets")
    require.module("torch")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.delenv("JUPYTER_DDL_WIDGETS", raising=False)  # a kernel: widgets
    yield data_dir
    from jupyter_ddl.manager import JobManager

    m = JobManager()
    for job in m.list(backend="local"):
        if not job.state.finished:
            m.cancel(job.name, backend="local")


def _cell(source: str, tags: tuple[str, ...] = ()) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def test_flag_and_form_jobs_leave_records_that_export(kernel_env, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _cell("%load_ext jupyter_ddl"),
        _cell("%%distribute --strategy torch-ddp --replicas 2 --name rec-wait --wait\n" + TRAIN),
        _cell("%%distribute --strategy torch-ddp --replicas 2 --name rec-bg\n" + TRAIN),
        _cell(
            "%%distribute --strategy torch-ddp --replicas 2 --restart-policy Never "
            "--name rec-crash --wait\n" + CRASH,
            ("raises-exception",),
        ),  # fmt: skip
        _cell("%%distribute\n" + TRAIN),  # the form
        _cell(CLICK),
        _cell("%ddl wait rec-bg\n%ddl wait $job"),
    ]
    NotebookClient(
        nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    path = tmp_path / "records.ipynb"
    nbformat.write(nb, path)
    saved = nbformat.read(path, as_version=4)
    cells = saved.cells

    records = {}
    for i in (1, 2, 3, 4):
        outs = cells[i].outputs
        for o in outs:
            data = o.get("data", {})
            assert WIDGET not in data, f"cell {i}: a widget output (a saved file cannot show it)"
        found = [o.data for o in outs if "ddl-record" in o.get("data", {}).get("text/html", "")]
        assert len(found) == 1, f"cell {i}: {len(found)} records"  # once, not twice
        records[i] = found[0]

    for i, name in ((1, "rec-wait"), (2, "rec-bg")):
        html, text = records[i]["text/html"], records[i]["text/plain"]
        assert f"data-job='{name}'" in html and "Succeeded" in text
        assert f"%ddl attach {name}" in text and "<svg" in html and "<script" not in html
        assert 'data-log="true"' in html  # a loss over ten decades gets a log axis
        assert "master-0 · rank 0" in text and "worker-0 · rank 1" in text
        assert "[worker-0] rank 1 step 5" in text
    form_record = records[4]
    note = [
        o.data
        for o in cells[4].outputs
        if "ddl-form-note" in o.get("data", {}).get("text/html", "")
    ]
    assert len(note) == 1  # the form gave its place to a static note once its job ended
    assert "--strategy torch-ddp --replicas 2" in note[0]["text/plain"]
    assert "Succeeded" in form_record["text/plain"] and "ddl-record" in form_record["text/html"]
    assert form_record["text/html"].count("class='ddl-record'") == 1  # the double click: one job

    crash = records[3]["text/html"]
    assert "Failed" in records[3]["text/plain"]
    root = crash.index("class='ddl-rootcause'")
    assert crash.index("ValueError: boom", root) < crash.index("Connection", root)
    assert "worker-0 · rank 1</b> failed first" in crash
    assert "(a consequence)" in crash
    assert "failed first: ValueError: boom" in _texts(cells[3])  # the cell's one-line error

    everything = json.dumps(saved)
    assert "@@ddl-metric@@" not in everything  # no marker line anywhere, live or saved

    html_path = tmp_path / "records.html"
    subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", str(path), "--output", html_path.name],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    exported = html_path.read_text()
    jobs = re.findall(r"""ddl-record["'] data-job=["']([\w-]+)""", exported)
    assert jobs[:3] == ["rec-wait", "rec-bg", "rec-crash"] and len(jobs) == 4
    assert len(re.findall(r"""class=["']ddl-chart["']""", exported)) == 3  # the crash: none
    assert "Error displaying widget" not in exported


def _texts(cell) -> str:
    out = []
    for o in cell.outputs:
        if o.output_type == "stream":
            out.append(o.text)
        elif o.output_type == "error":
            out.append("\n".join(o.traceback))
        else:
            out.append(o.get("data", {}).get("text/plain", ""))
    return "\n".join(out)
