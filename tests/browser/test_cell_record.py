"""The cell's side in a real JupyterLab and Chromium: the form's job (double-clicked
Submit: one job), its live dashboard in the dark theme with no marker text anywhere
on the page, its record replacing the dashboard and still there after the notebook is
reopened with a new kernel; a job whose rank 1 raises shows rank 1's exception first
in the cell, and the sidebar's job view opens on that replica; a dashboard whose kernel
restarted says so and its buttons do nothing. Screenshots: .test-artifacts/cell-*.png."""

from __future__ import annotations

import json
import time

import nbformat
import pytest

from .labpage import LabPage, dark_theme, png_size

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(420)]

TRAIN = """\
import time
for step in range(40):
    report(step=step, loss=10.0 ** (1 - step / 3))
    print(f"rank {rank} step {step}", flush=True)
    time.sleep(0.25)
"""

CRASH = """\
import torch, torch.distributed as dist
print(f"rank {rank} starting", flush=True)
if rank == 1:
    raise ValueError("boom")
dist.all_reduce(torch.ones(1))
"""

LONG = """\
import time
for step in range(600):
    report(step=step, loss=1.0 / (step + 1))
    time.sleep(0.5)
"""

BODY_TEXT = "document.body.innerText"
WIDGET = "application/vnd.jupyter.widget-view+json"


def _notebook(path, sources: list[str]) -> None:
    cells = [
        {"cell_type": "code", "execution_count": None, "id": f"cell{i}abc", "metadata": {},
         "outputs": [], "source": src}
        for i, src in enumerate(sources)
    ]  # fmt: skip
    meta = {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}
    path.write_text(
        json.dumps({"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5})
    )


def _menu(page, menu: str, item: str) -> None:
    page.click(f".lm-MenuBar-itemLabel:text-is('{menu}')")
    page.click(f".lm-Menu-itemLabel:text-is('{item}')")


def _run_all(lp: LabPage) -> None:
    lp.page.wait_for_timeout(1000)  # the kernel connected: Run All is sent to it
    _menu(lp.page, "Run", "Run All Cells")


def _no_markers(page) -> None:
    text = page.evaluate(BODY_TEXT)
    assert "@@" not in text, text[max(0, text.find("@@") - 200) : text.find("@@") + 200]


def _cancel_all(manager) -> None:
    for job in manager.list(backend="local"):
        if not job.state.finished:
            manager.cancel(job.name, backend="local")


def test_form_job_dashboard_record_and_reopen(lab, browser, artifacts, data_dir):
    from jupyter_ddl.manager import JobManager

    dark_theme(lab["settings"])
    _notebook(lab["root"] / "form.ipynb", ["%load_ext jupyter_ddl", "%%distribute\n" + TRAIN])
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    lp, manager = LabPage(page, lab), JobManager()
    try:
        lp.open_notebook("form.ipynb")
        _run_all(lp)
        submit = page.locator("button.ddl-submit")
        submit.wait_for(timeout=90_000)
        name = page.locator(".ddl-name input").get_attribute("placeholder")
        assert name and name.startswith("form-cell1abc-"), name  # notebook and cell id
        submit.dblclick()

        dashboard = page.locator(".ddl-dashboard")
        dashboard.wait_for(timeout=90_000)
        lp.show_jobs()
        # while it runs: the chart draws, no marker text anywhere (cell, tabs, sidebar)
        page.wait_for_selector(".ddl-dashboard svg.ddl-chart polyline", timeout=60_000)
        page.wait_for_function(
            f"{BODY_TEXT}.includes('rank 1 step 3')", timeout=60_000
        )  # fmt: skip
        for _ in range(6):
            _no_markers(page)
            time.sleep(0.5)
        assert submit.is_disabled() and page.locator("button.ddl-submit-another").is_visible()
        dashboard.screenshot(path=str(artifacts / "cell-dashboard-dark.png"))
        page.screenshot(path=str(artifacts / "cell-dashboard-dark-page.png"))

        # the end: the record replaces the dashboard in the same output, once
        record = page.locator(f".ddl-record[data-job='{name}']")
        record.wait_for(timeout=120_000)
        page.wait_for_selector(".ddl-dashboard", state="detached", timeout=30_000)
        assert record.get_attribute("data-state") == "Succeeded"
        assert page.locator(".ddl-record").count() == 1
        assert [j.name for j in manager.list(backend="local")] == [name]  # one job
        _no_markers(page)
        # the job ended: the form gives its place to a static note naming the job and the
        # same choice as flags (a saved notebook cannot show a widget)
        note = page.locator(".ddl-form-note")
        note.wait_for(timeout=30_000)
        assert name in note.inner_text() and "--strategy torch-ddp" in note.inner_text()
        assert page.locator("button.ddl-submit").count() == 0
        record.screenshot(path=str(artifacts / "cell-record-dark.png"))

        _menu(page, "File", "Save Notebook")
        deadline = time.monotonic() + 30
        while "ddl-record" not in (lab["root"] / "form.ipynb").read_text():
            assert time.monotonic() < deadline, "the notebook was not saved with its record"
            time.sleep(0.3)
        saved = nbformat.read(lab["root"] / "form.ipynb", as_version=4)
        outs = saved.cells[1].outputs
        records = [o for o in outs if "ddl-record" in o.get("data", {}).get("text/html", "")]
        assert len(records) == 1 and WIDGET not in records[0]["data"]
        # a new kernel: shut this one down, open the notebook again
        _menu(page, "Kernel", "Shut Down Kernel")
        page.wait_for_timeout(1000)
    finally:
        page.close()
        _cancel_all(manager)

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    lp = LabPage(page, lab)
    try:
        lp.open_notebook("form.ipynb")
        record = page.locator(f".ddl-record[data-job='{name}']")
        record.wait_for(timeout=60_000)
        assert record.get_attribute("data-state") == "Succeeded"
        text = record.inner_text()
        assert f"%ddl attach {name}" in text and "master-0 · rank 0" in text
        assert "rank 1 step 39" in text
        assert record.locator("svg.ddl-chart polyline").count() >= 2
        assert record.locator("g.ddl-chart-panel[data-log='true']").count() == 1
        _no_markers(page)
        assert "model not found" not in page.locator(".jp-Notebook").inner_text()
        assert page.locator(".ddl-form-note").count() == 1
        page.screenshot(path=str(artifacts / "cell-record-reopened.png"))
    finally:
        page.close()
    for png in ("cell-dashboard-dark.png", "cell-record-dark.png", "cell-record-reopened.png"):
        assert png_size(artifacts / png)[0] > 300 and (artifacts / png).stat().st_size > 10_000


def test_rank_one_raising_leads_the_cell_and_the_job_view(lab, browser, artifacts, data_dir):
    from jupyter_ddl.manager import JobManager

    flags = "--strategy torch-ddp --replicas 2 --restart-policy Never --name cell-crash --wait"
    _notebook(
        lab["root"] / "crash.ipynb", ["%load_ext jupyter_ddl", f"%%distribute {flags}\n{CRASH}"]
    )
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    lp, manager = LabPage(page, lab), JobManager()
    try:
        lp.open_notebook("crash.ipynb")
        _run_all(lp)
        record = page.locator(".ddl-record[data-job='cell-crash']")
        record.wait_for(timeout=120_000)
        assert record.get_attribute("data-state") == "Failed"
        cell = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea")
        page.wait_for_function(
            "[...document.querySelectorAll('.jp-OutputArea')].some(o => o.innerText.includes('JobFailed'))",
            timeout=30_000,
        )
        text = cell.inner_text()
        first = text.index("ValueError: boom")
        assert "worker-0 · rank 1" in text[:first]
        for symptom in ("Connection closed by peer", "Connection reset by peer"):
            assert symptom not in text[:first]
        assert text.index("Root cause") < text.index("replica")  # before the table
        page.screenshot(path=str(artifacts / "cell-failure.png"))

        lp.show_jobs()
        view = lp.open_job("cell-crash")
        pane = page.locator(f'{view} .jp-DDL-log[data-replica="worker-0"]')
        pane.wait_for(state="visible", timeout=30_000)
        page.wait_for_function(
            f"document.querySelector('{view} .jp-DDL-log[data-replica=\"worker-0\"]')"
            ".innerText.includes('ValueError: boom')",
            timeout=30_000,
        )
        current = page.locator(f"{view} .jp-DDL-logtab.jp-mod-current").get_attribute(
            "data-replica"
        )
        assert current == "worker-0"
        cause = page.inner_text(f"{view} .jp-DDL-rootcause")
        assert cause.startswith("Root cause: worker-0 · rank 1 failed first — ValueError: boom")
        page.screenshot(path=str(artifacts / "cell-failure-jobview.png"))
    finally:
        page.close()
        _cancel_all(manager)


def test_a_dashboard_whose_kernel_restarted_says_so(lab, browser, artifacts, data_dir):
    from jupyter_ddl.manager import JobManager

    _notebook(
        lab["root"] / "restart.ipynb",
        ["%load_ext jupyter_ddl", "%%distribute --strategy torch-ddp --replicas 2 --name cell-long\n" + LONG],
    )  # fmt: skip
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    lp, manager = LabPage(page, lab), JobManager()
    try:
        lp.open_notebook("restart.ipynb")
        _run_all(lp)
        page.wait_for_selector(".ddl-dashboard .ddl-state[data-state='Running']", timeout=90_000)
        offline = page.locator(".ddl-dashboard .ddl-offline")
        assert not offline.is_visible()
        _menu(page, "Kernel", "Restart Kernel…")
        page.click(".jp-Dialog .jp-mod-accept")
        offline.wait_for(state="visible", timeout=30_000)
        assert "%ddl attach cell-long" in offline.inner_text()
        cancel = page.locator(".ddl-dashboard .ddl-live-button").first
        assert cancel.evaluate("b => getComputedStyle(b).pointerEvents") == "none"
        page.locator(".ddl-dashboard").screenshot(path=str(artifacts / "cell-disconnected.png"))
        assert manager.get("cell-long").state.value == "Running"  # the job itself runs on
    finally:
        page.close()
        _cancel_all(manager)
