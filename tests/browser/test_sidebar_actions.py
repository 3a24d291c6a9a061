"""Per-row Cancel and Delete in the sidebar, by keyboard: each states its consequences
before it runs, Enter keeps the job, a finished job's Cancel is disabled with its
reason, a job deleted while its dialog was open is said so in one line; the palette
commands; the notebook name opens the notebook at the job's cell."""

from __future__ import annotations

import json
import time

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .labpage import LabPage, submit

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(240)]

SLOW = (
    "import time\nfor i in range(3000):\n    print(f'step={i}', flush=True)\n    time.sleep(0.2)\n"
)
TOAST = ".Toastify__toast"


def _notebook(path, cells: list[str]) -> None:
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": cid,
                "metadata": {},
                "outputs": [],
                "source": f"print({cid!r})",
            }
            for cid in cells
        ],  # fmt: skip
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


def _palette(page, query: str, expect: str) -> None:
    """The command palette from the View menu, searching ``query`` until it lists
    ``expect``. Tried up to three times: while the shell still settles on a loaded
    machine, a widget taking the focus closes the modal palette."""
    for attempt in range(3):
        page.click(".lm-MenuBar-itemLabel:text-is('View')")
        page.click(".lm-Menu-itemLabel:text-is('Activate Command Palette')")
        try:
            page.fill(".lm-CommandPalette-input", query, timeout=5_000)
            _palette_has(page, expect)
            return
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            page.keyboard.press("Escape")


def _palette_has(page, label: str) -> None:
    page.wait_for_function(
        "l => [...document.querySelectorAll('.lm-CommandPalette-itemLabel')]"
        ".some(n => n.textContent.includes(l))",
        arg=label,
        timeout=10_000,
    )


def _wait_finished(manager, name: str) -> None:
    deadline = time.monotonic() + 60
    while not manager.get(name).state.finished:
        assert time.monotonic() < deadline, f"{name} did not finish"
        time.sleep(0.2)


def test_row_actions_confirm_by_keyboard_and_say_what_happened(lab, browser, artifacts, data_dir):
    from jupyter_ddl.errors import JobNotFound
    from jupyter_ddl.manager import JobManager

    manager = JobManager()
    submit(manager, "act-done", "print('ran')\n", "tf-mirrored", {"Worker": 1})
    submit(manager, "act-run", SLOW, "torch-ddp", {"Master": 1, "Worker": 1})
    submit(manager, "act-gone", SLOW, "torch-ddp", {"Master": 1, "Worker": 1})
    _wait_finished(manager, "act-done")
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    lp = LabPage(page, lab)
    try:
        lp.open()
        lp.show_jobs()
        run, done, gone = lp.row("act-run"), lp.row("act-done"), lp.row("act-gone")
        page.wait_for_selector(f'{run}[data-state="Running"]', timeout=90_000)
        page.wait_for_selector(f'{gone}[data-state="Running"]', timeout=90_000)
        page.wait_for_selector(done, timeout=30_000)

        # a finished job: Cancel disabled with its reason, Delete offered
        ended = page.locator(f"{done} .jp-DDL-row-cancel")
        assert ended.is_disabled()
        assert "has ended (Succeeded): nothing to cancel" in (ended.get_attribute("title") or "")
        assert page.locator(f"{done} .jp-DDL-row-delete").is_enabled()
        page.screenshot(path=str(artifacts / "sidebar-row-actions.png"))

        # keyboard only: from the row's name, Tab goes to its notebook, then its Cancel,
        # then its Delete; Enter on Cancel asks first
        page.focus(f"{run} .jp-DDL-open")
        order = []
        for _ in range(3):
            page.keyboard.press("Tab")
            order.append(page.evaluate("document.activeElement.className.split(' ')[0]"))
        assert order == ["jp-DDL-notebook", "jp-DDL-row-cancel", "jp-DDL-row-delete"], order
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Enter")
        dialog = page.locator(".jp-Dialog")
        dialog.wait_for(timeout=10_000)
        body = dialog.inner_text()
        assert "Cancel act-run?" in body
        assert "Stops all 2 replicas of act-run now" in body
        assert "cannot be resumed" in body
        page.screenshot(path=str(artifacts / "sidebar-cancel-confirm.png"))
        # Enter on the dialog keeps the job (the default is the safe button)
        page.keyboard.press("Enter")
        dialog.wait_for(state="detached", timeout=10_000)
        time.sleep(1)
        assert manager.get("act-run").state.value == "Running"
        focused = page.evaluate(
            "[document.activeElement.className, document.activeElement.closest('li')?.dataset.job]"
        )
        assert focused[0].startswith("jp-DDL-row-cancel") and focused[1] == "act-run", focused

        # again, then Tab to "Cancel job" and Enter: every replica stops
        page.keyboard.press("Enter")
        dialog.wait_for(timeout=10_000)
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent").strip() == "Cancel job"
        page.keyboard.press("Enter")
        page.wait_for_selector(f'{run}[data-state="Cancelled"]', timeout=60_000)
        assert page.locator(f"{run} .jp-DDL-row-cancel").is_disabled()
        assert manager.get("act-run").state.value == "Cancelled"

        # a job deleted while its Cancel dialog is open: one plain line, no error wall
        page.click(f"{gone} .jp-DDL-row-cancel")
        dialog.wait_for(timeout=10_000)
        manager.delete("act-gone")
        page.click(".jp-Dialog .jp-mod-accept")
        toast = page.locator(TOAST, has_text="act-gone no longer exists")
        toast.wait_for(timeout=15_000)
        assert "deleted meanwhile, so there is nothing to cancel" in toast.inner_text()
        page.wait_for_selector(gone, state="detached", timeout=30_000)
        assert not page.locator(".jp-Dialog").count()
        time.sleep(1)  # the toasts slide in
        page.screenshot(path=str(artifacts / "sidebar-cancel-deleted-meanwhile.png"))

        # Delete states what goes, then removes the record and the row
        page.focus(f"{done} .jp-DDL-row-delete")
        page.keyboard.press("Enter")
        dialog.wait_for(timeout=10_000)
        body = dialog.inner_text()
        assert "Delete act-done?" in body
        assert "Removes the job's record, logs and metrics from the local backend" in body
        page.screenshot(path=str(artifacts / "sidebar-delete-confirm.png"))
        page.click(".jp-Dialog .jp-mod-accept")
        page.wait_for_selector(done, state="detached", timeout=30_000)
        with pytest.raises(JobNotFound):
            manager.get("act-done")
    finally:
        page.close()
        for name in ("act-run", "act-gone", "act-done"):
            try:
                manager.delete(name)
            except JobNotFound:
                pass  # deleted by the test itself
        manager.close()


def test_palette_commands_and_the_notebook_link(lab, browser, artifacts, data_dir):
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.manager import JobManager
    from jupyter_ddl.models import JobSpec

    _notebook(lab["root"] / "train.ipynb", ["first", "second", "third"])
    manager = JobManager()
    spec = JobSpec(name="pal-job", strategy="tf-mirrored", replicas={"Worker": 1},
                   notebook="train.ipynb", cell_id="third")  # fmt: skip
    manager.submit(spec, build_bundle("print('ran')\n", notebook="train.ipynb"))
    _wait_finished(manager, "pal-job")
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    lp = LabPage(page, lab)
    try:
        lp.open()
        lp.show_jobs()
        row = lp.row("pal-job")
        page.wait_for_selector(row, timeout=60_000)

        # the palette lists the job commands; "attach" asks which job, then opens its view
        _palette(page, "training job", "Delete a training job")
        items = page.locator(".lm-CommandPalette-itemLabel").all_text_contents()
        for label in ("Attach to a training job", "Cancel a training job", "Delete a training job"):
            assert any(label in i for i in items), items
        page.fill(".lm-CommandPalette-input", "Attach to a training job")
        _palette_has(page, "Attach to a training job")
        page.keyboard.press("Enter")
        page.wait_for_selector(".jp-Dialog select", timeout=10_000)
        assert "pal-job (local, Succeeded)" in page.inner_text(".jp-Dialog select")
        page.keyboard.press("Enter")
        page.wait_for_selector('.jp-DDL-jobview[data-job="pal-job"]', timeout=30_000)

        # palette "Cancel" on a finished job's view: nothing to cancel, said in one line
        page.click('.jp-DDL-jobview[data-job="pal-job"] .jp-DDL-jobview-header')
        _palette(page, "Cancel a training job", "Cancel a training job")
        page.keyboard.press("Enter")
        page.locator(TOAST, has_text="has ended (Succeeded): nothing to cancel").wait_for(
            timeout=10_000
        )

        # the job view's notebook link opens the notebook with the job's cell selected
        view_link = page.locator('.jp-DDL-jobview[data-job="pal-job"] .jp-DDL-open-notebook')
        assert view_link.inner_text() == "train.ipynb"
        view_link.focus()
        page.keyboard.press("Enter")
        active = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell.jp-mod-active .cm-content"
        selected = f"document.querySelector('{active}')?.textContent.includes('third')"
        page.wait_for_function(selected, timeout=60_000)
        page.screenshot(path=str(artifacts / "notebook-opened-at-cell.png"))

        # another cell selected, then the sidebar's notebook name selects the job's again
        page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").first.click()
        page.wait_for_function(f"!({selected})")
        if not page.locator("#jupyter-ddl-jobs").is_visible():
            lp.show_jobs()
        link = page.locator(f"{row} .jp-DDL-notebook")
        assert link.inner_text() == "train.ipynb"
        link.focus()
        page.keyboard.press("Enter")
        page.wait_for_function(selected, timeout=30_000)
    finally:
        page.close()
        manager.delete("pal-job")
        manager.close()
