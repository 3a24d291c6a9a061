"""The Jupyter server stops answering while the sidebar shows jobs: one line says so
with the age of what is shown and the next step, the rows stay, and a running job's
time stops counting instead of pretending it is still known."""

from __future__ import annotations

import time

import pytest

from .labpage import LabPage, submit

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(240)]

SLOW = "import time\nfor i in range(3000):\n    time.sleep(0.2)\n"
STATUS = ".jp-DDL-panel-status"


def test_a_server_that_stops_answering_is_one_line_and_the_rows_stay(
    lab, browser, artifacts, data_dir
):
    from jupyter_ddl.manager import JobManager

    manager = JobManager()
    submit(manager, "out-run", SLOW, "torch-ddp", {"Master": 1, "Worker": 1})
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    lp = LabPage(page, lab)
    try:
        lp.open()
        lp.show_jobs()
        row = lp.row("out-run")
        page.wait_for_selector(f'{row}[data-state="Running"]', timeout=90_000)
        assert page.inner_text(STATUS).strip() == ""

        lab["proc"].terminate()
        lab["proc"].wait(15)
        page.wait_for_function(
            f"document.querySelector('{STATUS}').textContent.includes('does not answer')",
            timeout=60_000,
        )
        line = page.inner_text(STATUS).strip()
        assert "\n" not in line, line
        # the list was current while the push channel was open: its age counts from the stop
        assert line.startswith("The Jupyter server does not answer; the jobs below are from "), line
        assert " s ago." in line, line
        assert line.endswith("Retrying; check that the server runs, or press Refresh."), line
        assert "Failed to fetch" not in lp.panel_text()
        # what it had stays: the row, its state, its time frozen where it was known
        assert page.get_attribute(row, "data-state") == "Running"
        elapsed = page.inner_text(f"{row} .jp-DDL-elapsed")
        time.sleep(2.5)
        assert page.inner_text(f"{row} .jp-DDL-elapsed") == elapsed
        page.screenshot(path=str(artifacts / "sidebar-server-down.png"))
    finally:
        page.close()
        manager.delete("out-run")
        manager.close()
