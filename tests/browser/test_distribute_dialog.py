""" "Distribute this cell" opens a form: it proposes TensorFlow strategies for a
TensorFlow notebook, writes the flags chosen for a torch cell (replacing a
%%distribute line already there), and says so when the cell is empty."""

from __future__ import annotations

import json

import pytest

from .labpage import LabPage

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(240)]

DIALOG = ".jp-Dialog"
BUTTON = '[data-command="jupyter-ddl:distribute-cell"]'
CELLS = ".jp-Notebook .jp-Cell .cm-content"


def _notebook(path, sources):
    cells = [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": f"c{i}",
            "metadata": {},
            "outputs": [],
            "source": src,
        }
        for i, src in enumerate(sources)
    ]
    meta = {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}
    path.write_text(
        json.dumps({"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5})
    )


def _distribute(lp: LabPage, cell: int) -> None:
    lp.page.locator(CELLS).nth(cell).click()
    lp.page.click(BUTTON)
    lp.page.wait_for_selector(DIALOG, timeout=30_000)


def _options(page, select: str) -> list[str]:
    return page.locator(f"{DIALOG} {select} option").evaluate_all("os => os.map(o => o.value)")


def test_tensorflow_notebook_gets_tensorflow_strategies(lab, browser, artifacts):
    _notebook(lab["root"] / "tf.ipynb", ["import tensorflow as tf", "x = tf.ones(3)", ""])
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    lp = LabPage(page, lab)
    try:
        lp.open_notebook("tf.ipynb")
        _distribute(lp, 1)  # no import in the cell itself: the notebook's earlier cells say TF
        assert page.input_value(f"{DIALOG} .jp-DDL-framework") == "tensorflow"
        offered = _options(page, ".jp-DDL-strategy")
        assert offered and all(s.startswith("tf-") for s in offered), offered
        assert "tf-tpu" not in offered  # the local backend has no TPU
        assert page.input_value(f"{DIALOG} .jp-DDL-strategy") == "tf-multi-worker-mirrored"
        page.screenshot(path=str(artifacts / "distribute-dialog-tf.png"))
        page.click(f"{DIALOG} .jp-mod-reject")
        assert page.locator(CELLS).nth(1).inner_text() == "x = tf.ones(3)"  # cancelled: unchanged

        # an empty cell: a message, no magic
        _distribute(lp, 2)
        assert "empty" in page.inner_text(DIALOG)
        page.click(f"{DIALOG} .jp-mod-accept")
        assert page.locator(CELLS).nth(2).inner_text().strip() == ""
        assert page.locator(CELLS).count() == 3  # nor a %load_ext cell
    finally:
        page.close()


def test_torch_cell_gets_the_flags_chosen(lab, browser):
    _notebook(lab["root"] / "torch.ipynb", ["import torch", "model = torch.nn.Linear(2, 1)"])
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    lp = LabPage(page, lab)
    try:
        lp.open_notebook("torch.ipynb")
        _distribute(lp, 1)
        assert page.input_value(f"{DIALOG} .jp-DDL-framework") == "pytorch"
        assert page.input_value(f"{DIALOG} .jp-DDL-strategy") == "torch-ddp"
        page.fill(f"{DIALOG} .jp-DDL-replicas-input", "3")
        page.fill(f"{DIALOG} .jp-DDL-extra", "--wait")
        preview = page.inner_text(f"{DIALOG} .jp-DDL-form-preview")
        assert preview == "%%distribute --strategy torch-ddp --replicas 3 --wait"
        page.click(f"{DIALOG} .jp-mod-accept")
        page.wait_for_selector(DIALOG, state="detached")
        sources = page.locator(CELLS).all_inner_texts()
        assert sources[0] == "%load_ext jupyter_ddl"
        assert sources[2] == (
            "%%distribute --strategy torch-ddp --replicas 3 --wait\nmodel = torch.nn.Linear(2, 1)"
        )

        # again on the same cell: the form starts from its line, and replaces it
        _distribute(lp, 2)
        assert page.input_value(f"{DIALOG} .jp-DDL-replicas-input") == "3"
        assert page.input_value(f"{DIALOG} .jp-DDL-extra") == "--wait"
        page.fill(f"{DIALOG} .jp-DDL-replicas-input", "2")
        page.click(f"{DIALOG} .jp-mod-accept")
        page.wait_for_selector(DIALOG, state="detached")
        sources = page.locator(CELLS).all_inner_texts()
        assert len(sources) == 3 and sources[0] == "%load_ext jupyter_ddl"
        assert sources[2] == (
            "%%distribute --strategy torch-ddp --replicas 2 --wait\nmodel = torch.nn.Linear(2, 1)"
        )
    finally:
        page.close()


def test_a_count_out_of_range_is_said_and_nothing_is_written(lab, browser, artifacts):
    """0 replicas is not turned into 1: the form says what it takes, Insert is off,
    and Enter writes nothing but the same line."""
    _notebook(lab["root"] / "zero.ipynb", ["import torch", "model = torch.nn.Linear(2, 1)"])
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    lp = LabPage(page, lab)
    try:
        lp.open_notebook("zero.ipynb")
        _distribute(lp, 1)
        page.fill(f"{DIALOG} .jp-DDL-replicas-input", "0")
        problem = page.wait_for_selector(f"{DIALOG} .jp-DDL-form-problem:not([hidden])")
        assert problem.inner_text() == (
            "Replicas (total) must be a whole number 1 or more for this strategy; 0 was given."
        )
        assert "--replicas 1" not in page.inner_text(f"{DIALOG} .jp-DDL-form-preview")
        assert page.is_disabled(f"{DIALOG} .jp-mod-accept")
        page.screenshot(path=str(artifacts / "distribute-zero-replicas.png"))
        page.press(f"{DIALOG} .jp-DDL-replicas-input", "Enter")
        error = page.wait_for_selector(".jp-Dialog .jp-Dialog-body:has-text('0 was given')")
        assert "Replicas (total)" in error.inner_text()
        page.keyboard.press("Escape")
        page.wait_for_selector(DIALOG, state="detached")
        assert not any("%%distribute" in s for s in page.locator(CELLS).all_inner_texts())
    finally:
        page.close()
