"""The acceptance path in a real browser: a notebook cell distributed with the toolbar
button and run in a real kernel, the job seen in the sidebar, its logs followed live,
then cancelled from the job view. Screenshots go to .test-artifacts/."""

from __future__ import annotations

import json
import struct

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(240)]

JOB = "ui-job"
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


def _png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def _lines(page, replica: str) -> int:
    return int(page.get_attribute(f'.jp-DDL-log[data-replica="{replica}"]', "data-lines") or 0)


def test_sidebar_follows_and_cancels_a_notebook_job(lab, browser, artifacts, data_dir):
    from jupyter_ddl.errors import JobNotFound
    from jupyter_ddl.manager import JobManager

    _notebook(lab["root"] / "train.ipynb")
    plugin_settings = lab["settings"] / "jupyter-ddl"
    plugin_settings.mkdir(parents=True)
    flags = f"--strategy torch-ddp --replicas 2 --name {JOB}"
    (plugin_settings / "plugin.jupyterlab-settings").write_text(json.dumps({"defaultFlags": flags}))

    page = browser.new_page(viewport={"width": 1400, "height": 900})
    manager = JobManager()
    try:
        page.goto(f"{lab['url']}lab/tree/train.ipynb?token={lab['token']}")
        page.wait_for_selector(".jp-Notebook .jp-Cell .cm-content", timeout=60_000)
        page.wait_for_selector(
            '.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=60_000
        )

        # "Distribute this cell" from the notebook toolbar
        page.click(".jp-Notebook .jp-Cell .cm-content")
        page.click('[data-command="jupyter-ddl:distribute-cell"]')
        sources = page.locator(".jp-Notebook .jp-Cell .cm-content").all_inner_texts()
        assert sources[0].strip() == "%load_ext jupyter_ddl"
        assert sources[1].startswith(f"%%distribute {flags}\n")

        # run both cells in the notebook's kernel
        page.locator(".jp-Notebook .jp-Cell .cm-content").first.click()
        page.keyboard.press("Shift+Enter")
        page.keyboard.press("Shift+Enter")

        # the sidebar shows the job running with both replicas ready
        page.click('.jp-SideBar [data-id="jupyter-ddl-jobs"]')
        row = f'.jp-DDL-jobrow[data-job="{JOB}"]'
        page.wait_for_selector(f'{row}[data-state="Running"]', timeout=90_000)
        page.wait_for_function(
            f"document.querySelector('{row} .jp-DDL-jobmeta')?.textContent.includes('2/2 ready')",
            timeout=60_000,
        )
        page.screenshot(path=str(artifacts / "sidebar-running.png"))

        # the job view follows master-0's log: lines keep arriving
        page.click(row)
        log = '.jp-DDL-log[data-replica="master-0"]'
        page.wait_for_function(
            f"Number(document.querySelector('{log}')?.dataset.lines || 0) >= 3", timeout=60_000
        )
        first = _lines(page, "master-0")
        page.wait_for_function(
            f"Number(document.querySelector('{log}').dataset.lines) >= {first + 5}",
            timeout=30_000,
        )
        assert "step=0 loss=1.0000" in page.inner_text(f"{log} .jp-DDL-log-text")
        page.wait_for_selector(".jp-DDL-chart polyline[data-metric='loss']", timeout=30_000)
        page.screenshot(path=str(artifacts / "job-logs-live.png"))

        # switch to the worker's tab: it follows too
        page.click('.jp-DDL-logtab[data-replica="worker-0"]')
        page.wait_for_function(
            "Number(document.querySelector('.jp-DDL-log[data-replica=\"worker-0\"]')"
            "?.dataset.lines || 0) >= 1",
            timeout=30_000,
        )

        # Cancel, confirm, and the state changes in the view and in the sidebar
        page.click(".jp-DDL-cancel")
        page.click(".jp-Dialog .jp-mod-accept")
        page.wait_for_selector('.jp-DDL-badge[data-state="Cancelled"]', timeout=60_000)
        page.wait_for_selector(f'{row}[data-state="Cancelled"]', timeout=60_000)
        assert page.is_disabled(".jp-DDL-cancel")
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
        width, height = _png_size(artifacts / name)
        assert (width, height) == (1400, 900)
        assert (artifacts / name).stat().st_size > 20_000  # a rendered page, not a blank one
