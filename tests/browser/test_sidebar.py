"""The acceptance path in a real browser: a notebook cell distributed with the toolbar
button's form and run in a real kernel, the job seen in the sidebar, its logs followed
live (all replicas, then one), then cancelled from the job view's toolbar.
Screenshots go to .test-artifacts/."""

from __future__ import annotations

import json

import pytest

from .labpage import LabPage, png_size

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(240)]

JOB = "ui-job"
FLAGS = f"--strategy torch-ddp --replicas 2 --name {JOB}"
CANCEL = ".jp-DDL-cancel"
TRAIN = """import time
for step in range(3000):
    print(f"step={step} loss={1.0 / (step + 1):.4f}", flush=True)
    time.sleep(0.2)"""


def _notebook(path):
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "id": "train",
        "metadata": {},
        "outputs": [],
        "source": TRAIN,
    }
    nb = {
        "cells": [cell],
        "metadata": {
            "kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


def _lines(page, replica: str) -> int:
    return int(page.get_attribute(f'.jp-DDL-log[data-replica="{replica}"]', "data-lines") or 0)


def test_sidebar_follows_and_cancels_a_notebook_job(lab, browser, artifacts, data_dir):
    from jupyter_ddl.errors import JobNotFound
    from jupyter_ddl.manager import JobManager

    _notebook(lab["root"] / "train.ipynb")
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    lp, manager = LabPage(page, lab), JobManager()
    try:
        lp.open_notebook("train.ipynb")

        # "Distribute this cell" from the notebook toolbar: the form, then the flags
        page.click(".jp-Notebook .jp-Cell .cm-content")
        page.click('[data-command="jupyter-ddl:distribute-cell"]')
        page.wait_for_selector(".jp-Dialog .jp-DDL-strategy", timeout=30_000)
        page.select_option(".jp-Dialog .jp-DDL-framework", "pytorch")
        page.select_option(".jp-Dialog .jp-DDL-strategy", "torch-ddp")
        page.fill(".jp-Dialog .jp-DDL-replicas-input", "2")
        page.fill(".jp-Dialog .jp-DDL-extra", f"--name {JOB}")
        page.click(".jp-Dialog .jp-mod-accept")
        sources = page.locator(".jp-Notebook .jp-Cell .cm-content").all_inner_texts()
        assert sources[0].strip() == "%load_ext jupyter_ddl"
        assert sources[1].startswith(f"%%distribute {FLAGS}\n")

        # run both cells in the notebook's kernel
        page.locator(".jp-Notebook .jp-Cell .cm-content").first.click()
        page.keyboard.press("Shift+Enter")
        page.keyboard.press("Shift+Enter")

        # the sidebar shows the job running with both replicas ready, from its notebook
        lp.show_jobs()
        row = lp.row(JOB)
        page.wait_for_selector(f'{row}[data-state="Running"]', timeout=90_000)
        page.wait_for_selector(f'{row} .jp-DDL-replicas-cell[data-ready="2"]', timeout=60_000)
        assert page.inner_text(f"{row} .jp-DDL-replicas-cell") == "2/2 ready"
        assert page.inner_text(f"{row} .jp-DDL-notebook") == "train.ipynb"
        page.screenshot(path=str(artifacts / "sidebar-running.png"))

        # the job view follows every replica: "all replicas" first, then each one
        view = lp.open_job(JOB)
        page.wait_for_selector(f'{view} .jp-DDL-logtab[data-replica="worker-0"]')
        tabs = page.locator(f"{view} .jp-DDL-logtab").all_inner_texts()
        assert tabs == ["all replicas", "master-0", "worker-0"]
        every = f'{view} .jp-DDL-log[data-replica="all"]'
        page.wait_for_function(
            f"Number(document.querySelector('{every}')?.dataset.lines || 0) >= 6", timeout=60_000
        )
        first = _lines(page, "all")
        page.wait_for_function(
            f"Number(document.querySelector('{every}').dataset.lines) >= {first + 5}",
            timeout=30_000,
        )
        text = page.inner_text(every)
        assert "master-0" in text and "worker-0" in text and "step=0 loss=1.0000" in text
        page.wait_for_selector(f"{view} .jp-DDL-chartbox[data-metric='loss'] polyline")
        page.screenshot(path=str(artifacts / "job-logs-live.png"))

        # the log tabs are a tablist: one tab stop, arrow keys move and show the pane
        assert page.get_attribute(f"{view} .jp-DDL-logtabs", "role") == "tablist"
        page.focus(f'{view} .jp-DDL-logtab[data-replica="all"]')
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        worker_tab = f'{view} .jp-DDL-logtab[data-replica="worker-0"]'
        assert page.get_attribute(worker_tab, "aria-selected") == "true"
        assert page.evaluate("document.activeElement.dataset.replica") == "worker-0"
        worker = f'{view} .jp-DDL-log[data-replica="worker-0"]'
        page.wait_for_selector(worker, state="visible")
        assert page.get_attribute(worker, "role") == "tabpanel"
        assert page.get_attribute(worker_tab, "aria-controls") == page.get_attribute(worker, "id")
        assert page.locator(f"{view} .jp-DDL-logtab[tabindex='0']").count() == 1
        # one replica's tab shows its lines only
        assert _lines(page, "worker-0") >= 3 and "master-0" not in page.inner_text(worker)
        # ... and follows its live end, as the merged one did before the switch
        at_end = f"(n => n.scrollHeight > n.clientHeight + 40 && n.scrollTop + n.clientHeight >= n.scrollHeight - 4)(document.querySelector('{worker}'))"
        page.wait_for_function(at_end, timeout=30_000)
        seen = _lines(page, "worker-0")
        page.wait_for_function(
            f"Number(document.querySelector('{worker}').dataset.lines) > {seen} && {at_end}",
            timeout=30_000,
        )
        # scrolling up stops following and offers "Jump to latest", which follows again
        page.eval_on_selector(worker, "n => { n.scrollTop = 0; }")
        page.wait_for_selector(f"{worker} .jp-DDL-jump", state="visible", timeout=10_000)
        assert page.get_attribute(worker, "data-following") == "false"
        page.screenshot(path=str(artifacts / "job-logs-scrolled-up.png"))
        page.click(f"{worker} .jp-DDL-jump")
        page.wait_for_function(at_end, timeout=10_000)
        # back to "all replicas" by keyboard: it still follows its end
        page.focus(worker_tab)
        page.keyboard.press("Home")
        every_end = at_end.replace(worker, every)
        page.wait_for_function(every_end, timeout=30_000)

        # Cancel (the view's toolbar), confirm, and the state changes in the view and sidebar
        page.click(f"{CANCEL}")
        page.click(".jp-Dialog .jp-mod-accept")
        page.wait_for_selector(f'{view} .jp-DDL-badge[data-state="Cancelled"]', timeout=60_000)
        page.wait_for_selector(f'{row}[data-state="Cancelled"]', timeout=60_000)
        page.wait_for_selector(f'{CANCEL}[aria-disabled="true"]', timeout=10_000)
        page.screenshot(path=str(artifacts / "job-cancelled.png"))
        assert manager.get(JOB).state.value == "Cancelled"
    finally:
        page.close()
        try:
            manager.delete(JOB)
        except JobNotFound:
            pass  # never started: the failed step above already says why
        manager.close()

    for name in ("sidebar-running.png", "job-logs-live.png", "job-cancelled.png"):
        width, height = png_size(artifacts / name)
        assert (width, height) == (1400, 900)
        assert (artifacts / name).stat().st_size > 20_000  # a rendered page, not a blank one
