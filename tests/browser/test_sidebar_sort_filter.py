"""The sidebar's filter and sort in a real browser, by keyboard: words narrow the list
to the jobs whose name, notebook, strategy or backend hold them, the state filter to
one state, and the sort orders by name, state or newest first."""

from __future__ import annotations

import pytest

from .labpage import LabPage, submit

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(240)]

JOBS = {  # name: (code, strategy)
    "beta-ok": ("print('ok')\n", "tf-mirrored"),
    "alpha-fail": ("raise SystemExit(3)\n", "tf-mirrored"),
    "gamma-ok": ("print('ok')\n", "torch-ddp"),
}


def _names(page) -> list[str]:
    return page.locator(".jp-DDL-jobrow").evaluate_all("rs => rs.map(r => r.dataset.job)")


def test_filter_and_sort_by_keyboard(lab, browser, artifacts, data_dir):
    from jupyter_ddl.manager import JobManager

    manager = JobManager()
    for name, (code, strategy) in JOBS.items():  # submitted in this order: gamma is newest
        replicas = {"Master": 1} if strategy == "torch-ddp" else {"Worker": 1}
        submit(manager, name, code, strategy, replicas)
        manager.wait(name, timeout=120)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    lp = LabPage(page, lab)
    try:
        lp.open()
        lp.show_jobs()
        page.wait_for_selector(f'{lp.row("alpha-fail")}[data-state="Failed"]', timeout=60_000)
        page.wait_for_function("document.querySelectorAll('.jp-DDL-jobrow').length === 3")
        assert _names(page) == ["gamma-ok", "alpha-fail", "beta-ok"]  # newest first

        # words: any case, every word must be there
        page.focus(".jp-DDL-filter-text")
        page.keyboard.type("TORCH")
        page.wait_for_function("document.querySelectorAll('.jp-DDL-jobrow').length === 1")
        assert _names(page) == ["gamma-ok"]
        page.keyboard.type(" nothing-like-this")
        page.wait_for_selector(".jp-DDL-jobrow", state="detached")
        assert page.inner_text(".jp-DDL-panel-status").strip() == "No job matches the filter."
        page.fill(".jp-DDL-filter-text", "")

        # the state filter, reached by Tab and changed with the arrow keys
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.className").startswith("jp-DDL-filter-state")
        page.select_option(".jp-DDL-filter-state", "Failed")
        page.wait_for_function("document.querySelectorAll('.jp-DDL-jobrow').length === 1")
        assert _names(page) == ["alpha-fail"]
        page.select_option(".jp-DDL-filter-state", "Succeeded")
        page.wait_for_function("document.querySelectorAll('.jp-DDL-jobrow').length === 2")
        page.select_option(".jp-DDL-filter-state", "")

        # the sort: by name, by state (failures before successes), newest again
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.className").startswith("jp-DDL-sort")
        page.select_option(".jp-DDL-sort", "name")
        assert _names(page) == ["alpha-fail", "beta-ok", "gamma-ok"]
        page.screenshot(path=str(artifacts / "sidebar-sorted-by-name.png"))
        page.select_option(".jp-DDL-sort", "state")
        assert _names(page)[0] == "alpha-fail"
        page.select_option(".jp-DDL-sort", "start")
        assert _names(page) == ["gamma-ok", "alpha-fail", "beta-ok"]
    finally:
        page.close()
        for name in JOBS:
            manager.delete(name)
        manager.close()
