"""The submit form, driven in Python by setting values and clicking buttons."""

from __future__ import annotations

import pytest

from jupyter_ddl.strategies import CATALOG
from jupyter_ddl.widgets.form import DistributeForm, load_choice
from tests.support import require


@pytest.fixture(autouse=True)
def _widgets():
    require.module("ipywidgets")


def _form(calls, notebook="nb.ipynb", backends=("local", "kubernetes")):
    return DistributeForm(
        submit=lambda a: calls.append(("submit", a)),
        dry_run=lambda a: calls.append(("dry_run", a)),
        backends=list(backends),
        notebook=notebook,
    )


def test_strategies_are_grouped_by_framework_with_an_explanation(data_dir):
    form = _form([])
    for framework in ("tensorflow", "pytorch", "mpi"):
        form.framework.value = framework
        names = [v for _, v in form.strategy.options]
        assert names and all(CATALOG[n].framework == framework for n in names)
        assert CATALOG[form.strategy.value].summary in form.explanation.value


def test_changing_the_strategy_changes_the_role_fields(data_dir):
    form = _form([])
    form.framework.value = "pytorch"
    form.strategy.value = "torch-ddp"
    assert list(form.role_fields) == ["Worker"]  # the one Master is fixed
    form.framework.value = "tensorflow"
    form.strategy.value = "tf-parameter-server"
    assert list(form.role_fields) == ["Worker", "PS", "Evaluator"]
    form.strategy.value = "tf-mirrored"
    assert form.role_fields == {}


def test_invalid_counts_show_an_error_and_disable_submit(data_dir):
    calls: list = []
    form = _form(calls)
    form.framework.value = "tensorflow"
    form.strategy.value = "tf-parameter-server"
    form.role_fields["PS"].value = 0  # typed: the rule is checked on every change
    assert "PS" in form.error.value and "at least 1" in form.error.value
    assert form.submit_button.disabled and form.dry_run_button.disabled
    form.submit_button.click()
    assert calls == []
    form.role_fields["PS"].value = 2
    assert form.error.value == "" and not form.submit_button.disabled
    form.role_fields["Evaluator"].value = 3
    assert "Evaluator" in form.error.value and form.submit_button.disabled


def test_gpus_on_a_strategy_or_negative_values_are_errors_inline(data_dir):
    form = _form([])
    form.gpus.value = -1
    assert "--gpus -1" in form.error.value and form.submit_button.disabled


def test_kubernetes_fields_only_for_kubernetes(data_dir):
    form = _form([])
    form.backend.value = "local"
    assert form.kube_box.layout.display == "none"
    form.backend.value = "kubernetes"
    assert form.kube_box.layout.display is None


def test_submit_and_dry_run_pass_the_choice_and_remember_it(data_dir):
    calls: list = []
    form = _form(calls)
    form.framework.value = "pytorch"
    form.strategy.value = "torch-ddp"
    form.role_fields["Worker"].value = 2
    form.cpu.value = "2"
    form.dry_run_button.click()
    form.submit_button.click()
    assert [c[0] for c in calls] == ["dry_run", "submit"]
    args = calls[-1][1]
    assert (args.strategy, args.workers, args.cpu, args.backend) == ("torch-ddp", 2, "2", "local")
    saved = load_choice("nb.ipynb")
    assert saved["strategy"] == "torch-ddp" and saved["replicas"] == {"Worker": 2}
    again = _form([])
    assert again.strategy.value == "torch-ddp" and again.role_fields["Worker"].value == 2
    assert again.cpu.value == "2"
    other = _form([], notebook="other.ipynb")
    assert other.role_fields["Worker"].value == 1  # remembered per notebook


def test_distribute_without_strategy_shows_the_form_and_submit_goes_through_the_job_api(
    shell, magics, fake, monkeypatch
):
    monkeypatch.setenv("JUPYTER_DDL_WIDGETS", "1")
    shell.run_cell("import math\nK = 2", store_history=True).raise_error()
    shell.run_cell_magic("distribute", "", "print(math.sqrt(K))")
    form = magics.last_form
    assert isinstance(form, DistributeForm) and fake.submitted == []
    form.framework.value = "pytorch"
    form.strategy.value = "torch-ddp"
    form.role_fields["Worker"].value = 2
    form.name.value = "from-form"
    form.submit_button.click()
    assert form.error.value == ""
    spec, bundle = fake.submitted[-1]
    assert spec.name == "from-form" and spec.replicas == {"Master": 1, "Worker": 2}
    assert "K = 2" in bundle.files["cell.py"].decode()
    assert "from-form" in magics.dashboards
    form.submit_button.click()  # same name again: the backend's conflict shows inline
    assert "exists" in form.error.value
