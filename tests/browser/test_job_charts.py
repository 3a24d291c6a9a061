"""The job view's charts and logs, in JupyterLab Dark, for real jobs that report
metrics: one legend entry per replica, a log axis for a loss that falls from 10 to
1e-13, Keras progress apart from report(), a restart drawn as a gap, hover values,
and no metric marker text anywhere in the sidebar or the job view.
Screenshots: .test-artifacts/dark-*.png."""

from __future__ import annotations

import time

import pytest

from .labpage import LabPage, dark_theme, ddl_settings, png_size, submit

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(300)]

# Both replicas report a loss from 10 down to 1e-13 (rank 1 ten times higher) and
# print a Keras-style progress line of the same loss.
DECADES = """import time
for step in range(15):
    loss = 10.0 ** (1 - step) * (1 + 9 * rank)
    report(step=step, loss=loss)
    print(f"1/1 [==============================] - 0s 2ms/step - loss: {loss:.4e}", flush=True)
    time.sleep(0.4)
"""

# Fails once at step 4, then runs again from step 0 (OnFailure restarts it).
RESTARTS = """import os, time
marker = os.path.join(os.environ["DDL_TEST_DIR"], "failed-once")
for step in range(8):
    report(step=step, loss=1.0 / (step + 1))
    time.sleep(0.1)
    if step == 4 and not os.path.exists(marker):
        open(marker, "w").close()
        raise SystemExit(1)
"""

# All three ranks report the same loss (as DDP's all-reduced loss is): one line would
# hide the others.
SAME = """for step in range(6):
    report(step=step, loss=1.0 / (step + 1))
"""


def _no_markers(lp: LabPage) -> None:
    text = lp.panel_text()
    assert "@@" not in text, text[text.index("@@") - 200 : text.index("@@") + 200]


def test_charts_and_logs_in_the_dark_theme(lab, browser, artifacts, data_dir, tmp_path):
    from jupyter_ddl.manager import JobManager
    from jupyter_ddl.models import RestartPolicy

    dark_theme(lab["settings"])
    ddl_settings(lab["settings"], refreshInterval=1)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    lp, manager = LabPage(page, lab), JobManager()
    try:
        lp.open()
        # the theme is applied a moment after the shell shows
        page.wait_for_function("document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
        lp.show_jobs()
        submit(manager, "decades", DECADES, "torch-ddp", {"Master": 1, "Worker": 1})
        submit(
            manager, "restarts", RESTARTS, "tf-mirrored", {"Worker": 1},
            restart_policy=RestartPolicy.ON_FAILURE, env={"DDL_TEST_DIR": str(tmp_path)},
        )  # fmt: skip
        submit(manager, "same", SAME, "torch-ddp", {"Master": 1, "Worker": 2})
        page.wait_for_selector(f'{lp.row("decades")}[data-state="Running"]', timeout=60_000)
        view = lp.open_job("decades")

        # while it runs: both replicas' lines arrive in "all replicas", no marker text
        all_log = f'{view} .jp-DDL-log[data-replica="all"]'
        page.wait_for_function(
            f"Number(document.querySelector('{all_log}')?.dataset.lines || 0) >= 6",
            timeout=60_000,
        )
        _no_markers(lp)
        text = page.inner_text(all_log)
        assert "master-0" in text and "worker-0" in text and "2ms/step - loss:" in text

        assert manager.wait("decades", timeout=120).state.value == "Succeeded"
        page.wait_for_selector(f'{view} .jp-DDL-badge[data-state="Succeeded"]', timeout=30_000)
        report = f'{view} .jp-DDL-chartbox[data-metric="loss"][data-source="report"]'
        page.wait_for_function(
            f"document.querySelectorAll('{report} polyline').length === 2", timeout=30_000
        )
        legend = page.locator(f"{report} .jp-DDL-legend-item")
        assert legend.count() == 2
        assert sorted(legend.evaluate_all("els => els.map(e => e.dataset.replica)")) == [
            "master-0",
            "worker-0",
        ]
        assert page.get_attribute(report, "data-scale") == "log"
        labels = page.locator(f"{report} .jp-DDL-tick").evaluate_all(
            "els => els.map(e => e.textContent)"
        )
        # y from 1e-13 (master-0's last loss) to 100 (worker-0's first), in decades
        assert {"1e-13", "1e-7", "0.1", "100"} <= set(labels), labels
        # Keras progress is its own chart, not mixed into report()'s loss
        keras = f'{view} .jp-DDL-chartbox[data-metric="loss"][data-source="keras"]'
        assert page.locator(keras).count() == 1

        # the toggle: linear and back
        page.click(f"{report} .jp-DDL-scale input")
        assert page.get_attribute(report, "data-scale") == "linear"
        page.click(f"{report} .jp-DDL-scale input")
        assert page.get_attribute(report, "data-scale") == "log"

        # hover: each replica's value at the step under the pointer
        box = page.locator(f"{report} svg").bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5)
        tip = page.locator(f"{report} .jp-DDL-tooltip")
        tip.wait_for(state="visible", timeout=5_000)
        assert "master-0" in tip.inner_text() and "worker-0" in tip.inner_text()
        time.sleep(0.5)
        page.screenshot(path=str(artifacts / "dark-job-view.png"))
        _no_markers(lp)

        # a restart starts a new segment instead of a line back to step 0
        assert manager.wait("restarts", timeout=120).state.value == "Succeeded"
        view = lp.open_job("restarts")
        restarted = f'{view} .jp-DDL-chartbox[data-metric="loss"][data-source="report"]'
        page.wait_for_selector(f'{restarted} polyline[data-segment="1"]', timeout=30_000)
        assert "2 attempts" in page.inner_text(f"{restarted} .jp-DDL-legend")
        assert page.get_attribute(restarted, "data-scale") == "linear"  # 1 .. 0.125
        page.screenshot(path=str(artifacts / "dark-job-restarts.png"))
        _no_markers(lp)

        # identical lines: each copy dashed at a phase of its own, the legend says whose
        assert manager.wait("same", timeout=120).state.value == "Succeeded"
        view = lp.open_job("same")
        same = f'{view} .jp-DDL-chartbox[data-metric="loss"][data-source="report"]'
        page.wait_for_selector(f'{same} polyline[data-replica="worker-1"]', timeout=30_000)
        legend = page.inner_text(f"{same} .jp-DDL-legend")
        assert "worker-0" in legend and legend.count("the same line as master-0") == 2, legend
        dashes = [
            page.get_attribute(f'{same} polyline[data-replica="{r}"]', "stroke-dashoffset")
            for r in ("master-0", "worker-0", "worker-1")
        ]
        assert dashes == [None, "6", "12"], dashes
        page.screenshot(path=str(artifacts / "dark-job-same-lines.png"))

        page.wait_for_selector(f'{lp.row("decades")}[data-state="Succeeded"]')
        page.screenshot(path=str(artifacts / "dark-sidebar.png"))
    finally:
        page.close()
        manager.close()
    for name in ("dark-job-view.png", "dark-job-restarts.png", "dark-sidebar.png"):
        assert png_size(artifacts / name) == (1400, 1000)
