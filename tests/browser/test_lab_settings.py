"""The settings editor shows "Default backend" as a list of the backends (the
schema's choices), not a free-text field."""

from __future__ import annotations

import pytest

from .labpage import LabPage

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(180)]


def test_the_default_backend_is_chosen_from_a_list(lab, browser, artifacts):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    lp = LabPage(page, lab)
    try:
        lp.open()
        page.click(".lm-MenuBar-itemLabel:text-is('Settings')")
        page.click(".lm-Menu-itemLabel:text-is('Settings Editor')")
        page.click(".jp-PluginList-entry:has-text('Distributed training')", timeout=30_000)
        choice = page.locator(
            "select:has(option:text-is('local: processes on this Jupyter server'))"
        )
        choice.wait_for(timeout=30_000)
        labels = choice.locator("option").all_inner_texts()
        assert [t.strip() for t in labels if t.strip()] == [
            "The server's configured default",
            "local: processes on this Jupyter server",
            "kubernetes: Kubeflow jobs on the cluster",
        ]
        page.screenshot(path=str(artifacts / "settings-default-backend.png"))
    finally:
        page.close()
