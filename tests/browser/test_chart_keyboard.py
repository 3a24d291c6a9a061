"""The metrics chart by keyboard, while the job runs and the view redraws every second:
the plot takes focus and shows each replica's value at the step the arrow keys, Home
and End pick; the tooltip, the step and the focus survive the redraws; legend entries
are toggle buttons that hide and show a replica's line."""

from __future__ import annotations

import time

import pytest

from .labpage import LabPage, ddl_settings, submit

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(240)]

STEPS = """import time
for step in range(40):
    report(step=step, loss=1.0 / (step + 1) * (1 + rank))
    time.sleep(0.5)
"""


def test_chart_values_by_keyboard_survive_redraws(lab, browser, artifacts, data_dir):
    from jupyter_ddl.manager import JobManager

    ddl_settings(lab["settings"], refreshInterval=1)
    manager = JobManager()
    submit(manager, "kbchart", STEPS, "torch-ddp", {"Master": 1, "Worker": 1})
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    lp = LabPage(page, lab)
    try:
        lp.open()
        lp.show_jobs()
        page.wait_for_selector(f'{lp.row("kbchart")}[data-state="Running"]', timeout=90_000)
        view = lp.open_job("kbchart")
        chart = f'{view} .jp-DDL-chartbox[data-metric="loss"]'
        page.wait_for_selector(f'{chart} polyline[data-replica="worker-0"]', timeout=60_000)

        # Tab from the scale toggle reaches the plot; focus shows the latest values
        page.focus(f"{chart} .jp-DDL-scale input")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.className") == "jp-DDL-chart-frame"
        tip = page.locator(f"{chart} .jp-DDL-tooltip")
        tip.wait_for(state="visible", timeout=5_000)
        assert tip.get_attribute("aria-live") == "polite"
        page.keyboard.press("Home")
        page.wait_for_function(
            f"document.querySelector('{chart} .jp-DDL-tooltip').textContent"
            ".startsWith('loss at step 0')"
        )
        text = tip.inner_text()
        assert "master-0: 1" in text and "worker-0: 2" in text, text
        page.keyboard.press("ArrowRight")
        assert tip.inner_text().startswith("loss at step 1"), tip.inner_text()

        # the job runs on and the charts redraw: the tooltip, its step and the focus stay
        redraws = page.evaluate(
            f"""() => new Promise(done => {{
                let n = 0;
                new MutationObserver(() => n++).observe(
                    document.querySelector('{view} .jp-DDL-charts'), {{childList: true}});
                setTimeout(() => done(n), 3500);
            }})"""
        )
        assert redraws >= 1, "the charts did not redraw while the job ran"
        assert tip.is_visible() and tip.inner_text().startswith("loss at step 1"), tip.inner_text()
        assert page.evaluate("document.activeElement.dataset.focus").endswith("|plot")
        page.keyboard.press("ArrowRight")
        assert tip.inner_text().startswith("loss at step 2")
        page.screenshot(path=str(artifacts / "chart-keyboard-tooltip.png"))

        # the legend: Tab to master-0's entry, Enter hides its line, Enter shows it again
        page.keyboard.press("Tab")
        focused = page.evaluate(
            "[document.activeElement.className, document.activeElement.dataset.replica]"
        )
        assert focused[0].startswith("jp-DDL-legend-item") and focused[1] == "master-0", focused
        page.keyboard.press("Enter")
        entry = f'{chart} .jp-DDL-legend-item[data-replica="master-0"]'
        page.wait_for_selector(f'{entry}[aria-pressed="false"]')
        assert page.locator(f'{chart} polyline[data-replica="master-0"]').count() == 0
        assert page.locator(f'{chart} polyline[data-replica="worker-0"]').count() >= 1
        assert page.evaluate("document.activeElement.dataset.replica") == "master-0"
        page.screenshot(path=str(artifacts / "chart-legend-hidden.png"))
        time.sleep(1.5)  # a redraw keeps it hidden
        assert page.get_attribute(entry, "aria-pressed") == "false"
        page.keyboard.press("Enter")
        page.wait_for_selector(f'{entry}[aria-pressed="true"]')
        page.wait_for_selector(f'{chart} polyline[data-replica="master-0"]')
    finally:
        page.close()
        manager.delete("kbchart")
        manager.close()
