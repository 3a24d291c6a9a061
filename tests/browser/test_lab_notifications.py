"""JupyterLab's own places say what the jobs do: the status bar counts the running
ones (a click opens the panel), and a job that ends while the page is open appears
in the notifications, with an Open action that opens its job view."""

from __future__ import annotations

import pytest

from .labpage import LabPage, submit

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(240)]

JOB = "ui-notified"


def test_status_bar_counts_running_jobs_and_the_end_is_notified(lab, browser, artifacts):
    from jupyter_ddl.manager import JobManager

    page = browser.new_page(viewport={"width": 1400, "height": 900})
    lp, manager = LabPage(page, lab), JobManager()
    try:
        lp.open()
        submit(manager, JOB, "import time\ntime.sleep(12)\nprint('done')\n", "tf-mirrored",
               {"Worker": 1})  # fmt: skip
        item = page.locator(".jp-DDL-running-item")
        item.wait_for(state="visible", timeout=60_000)
        assert item.inner_text() == "1 running"
        page.screenshot(path=str(artifacts / "statusbar-running.png"))
        item.click()
        page.wait_for_selector("#jupyter-ddl-jobs", state="visible")

        toast = page.locator(".Toastify__toast", has_text=f"Training job {JOB} succeeded")
        toast.wait_for(timeout=90_000)
        page.wait_for_timeout(800)  # the toast slides in: let it settle for the screenshot
        page.screenshot(path=str(artifacts / "notification-succeeded.png"))
        assert page.locator(".jp-DDL-running-item").is_hidden()
        toast.get_by_role("button", name="Open").click()
        page.wait_for_selector(f'.jp-DDL-jobview[data-job="{JOB}"]', timeout=30_000)
    finally:
        page.close()
        manager.delete(JOB)
        manager.close()
