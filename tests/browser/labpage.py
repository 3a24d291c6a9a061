"""What the browser tests share: lab settings written before the page loads, jobs
submitted through the job API, and a small page object for the sidebar and job view."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from playwright.sync_api import TimeoutError as PlaywrightTimeout

#: records when each job row first appears and when it first shows each state, in Unix
#: seconds of the browser's clock (the same clock as the job API's timestamps here)
ROW_TIMES_JS = """() => {
  window.__ddlRowTimes = {};
  const note = () => {
    const now = Date.now() / 1000;
    for (const row of document.querySelectorAll('.jp-DDL-jobrow')) {
      for (const k of [row.dataset.job + '|seen', row.dataset.job + '|' + row.dataset.state]) {
        if (!(k in window.__ddlRowTimes)) { window.__ddlRowTimes[k] = now; }
      }
    }
  };
  const options = {subtree: true, childList: true, attributes: true};
  new MutationObserver(note).observe(document.body, options);
}"""

#: the text of the sidebar and of every job view
PANEL_TEXT_JS = """
[...document.querySelectorAll('#jupyter-ddl-jobs, .jp-DDL-jobview')]
  .map(n => n.textContent).join('\\n')
"""


def write_settings(settings_dir: Path, plugin: str, values: dict[str, Any]) -> None:
    """User settings of one plugin (``@jupyterlab/apputils-extension:themes``), as
    JupyterLab stores them; written before the page loads."""
    package, _, name = plugin.rpartition(":")
    target = settings_dir / package / f"{name}.jupyterlab-settings"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(values))


def dark_theme(settings_dir: Path) -> None:
    write_settings(
        settings_dir, "@jupyterlab/apputils-extension:themes", {"theme": "JupyterLab Dark"}
    )


def ddl_settings(settings_dir: Path, **values: Any) -> None:
    write_settings(settings_dir, "jupyter-ddl:plugin", values)


def submit(manager, name: str, code: str, strategy: str, replicas: dict[str, int], **fields):
    """Submit ``code`` as a job through the one job API, as the magic does."""
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.models import JobSpec

    spec = JobSpec(
        name=name, strategy=strategy, replicas=replicas, notebook="work/train.ipynb", **fields
    )
    manager.submit(spec, build_bundle(code, notebook="work/train.ipynb"))


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


class LabPage:
    """The lab in one browser page."""

    def __init__(self, page, lab: dict[str, Any]) -> None:
        self.page, self.lab = page, lab

    def open(self, path: str = "lab") -> None:
        self.page.goto(f"{self.lab['url']}{path}?token={self.lab['token']}")
        self.page.wait_for_selector("#jupyter-ddl-jobs", state="attached", timeout=60_000)

    def open_notebook(self, name: str) -> None:
        self.open(f"lab/tree/{name}")
        self.page.wait_for_selector(".jp-Notebook .jp-Cell .cm-content", timeout=60_000)
        self.page.wait_for_selector(
            '.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=60_000
        )
        # On a loaded machine the kernel specs can arrive after the notebook opened and
        # JupyterLab then asks which kernel to start; the notebook names python3: take it.
        ask = self.page.locator(".jp-Dialog:has-text('Select Kernel') .jp-mod-accept")
        try:
            ask.wait_for(timeout=1500)
        except PlaywrightTimeout:
            return
        ask.click()
        self.page.wait_for_selector(
            '.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=60_000
        )

    def show_jobs(self) -> None:
        self.page.click('.jp-SideBar [data-id="jupyter-ddl-jobs"]')
        self.page.wait_for_selector("#jupyter-ddl-jobs", state="visible")

    @staticmethod
    def row(job: str) -> str:
        return f'.jp-DDL-jobrow[data-job="{job}"]'

    def record_rows(self) -> None:
        """From now on, note when each row appears and changes state (``row_times``)."""
        self.page.evaluate(ROW_TIMES_JS)

    def row_times(self) -> dict[str, float]:
        return self.page.evaluate("window.__ddlRowTimes || {}")

    def panel_text(self) -> str:
        return self.page.evaluate(PANEL_TEXT_JS)

    def open_job(self, job: str) -> str:
        """Open the job view from the sidebar; returns its selector."""
        self.page.click(self.row(job))
        view = f'.jp-DDL-jobview[data-job="{job}"]'
        self.page.wait_for_selector(view, timeout=30_000)
        return view
