"""axe-core over the "Distribute this cell" form and over a finished job's record in
its notebook (the record a real job left, in a trusted notebook), in the light and
the dark theme: no serious or critical violation. Screenshots: .test-artifacts/a11y-*.png."""

from __future__ import annotations

import time

import nbformat
import pytest
from nbformat.sign import NotebookNotary

from .labpage import LabPage, dark_theme, submit
from .test_accessibility import AXE, AXE_RUN

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(240)]

JOB = "ui-a11y-record"
TRAIN = "for step in range(5):\n    report(step=step, loss=1.0 / (step + 1))\n    print(f'step {step}')\n"


def _record_notebook(manager, path, data_dir) -> None:
    """A notebook whose cell holds the record of a real finished job, signed as the
    server signs what its user ran (so its HTML renders as the user saw it)."""
    from jupyter_ddl.present.record import record_bundle
    from jupyter_ddl.present.state import DashboardState

    st = DashboardState(JOB)
    for event in manager.watch(JOB):
        st.apply(event)
    cell = nbformat.v4.new_code_cell(f"%%distribute --name {JOB}\n{TRAIN}")
    cell.outputs = [nbformat.v4.new_output("display_data", data=record_bundle(st))]
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "language": "python",
        "display_name": "Python 3",
    }
    NotebookNotary(data_dir=str(data_dir)).sign(nb)
    nbformat.write(nb, str(path))


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_form_and_record_have_no_serious_axe_violation(
    theme, lab, browser, artifacts, data_dir, tmp_path
):
    from jupyter_ddl.manager import JobManager

    if not AXE.exists():
        pytest.skip("axe-core is not installed (npm ci in labextension/ installs it)")
    if theme == "dark":
        dark_theme(lab["settings"])
    manager = JobManager()
    submit(manager, JOB, TRAIN, "torch-ddp", {"Master": 1, "Worker": 1})
    assert manager.wait(JOB, timeout=120).state.value == "Succeeded"
    _record_notebook(manager, lab["root"] / "record.ipynb", tmp_path / "jupyter_data_dir")
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    lp = LabPage(page, lab)
    try:
        lp.open_notebook("record.ipynb")
        if theme == "dark":
            page.wait_for_selector('body[data-jp-theme-light="false"]', state="attached")
        record = page.locator(f".ddl-record[data-job='{JOB}']")
        record.wait_for(timeout=60_000)
        assert record.locator("svg polyline").count() >= 2, "the record lost its chart"
        page.add_script_tag(path=str(AXE))
        found = {"record": page.evaluate(AXE_RUN, ".ddl-record")}
        page.screenshot(path=str(artifacts / f"a11y-record-{theme}.png"))

        # the form: "Distribute this cell" from the notebook toolbar
        page.locator(".jp-Notebook .jp-Cell .cm-content").first.click()
        page.click('[data-command="jupyter-ddl:distribute-cell"]')
        page.wait_for_selector(".jp-Dialog .jp-DDL-strategy", timeout=30_000)
        time.sleep(0.5)  # the dialog's fade-in: axe reads colours as painted
        found["form"] = page.evaluate(AXE_RUN, ".jp-Dialog")
        page.screenshot(path=str(artifacts / f"a11y-form-{theme}.png"))
        assert found == {"record": [], "form": []}
    finally:
        page.close()
        manager.delete(JOB)
        manager.close()
