"""The submit form, driven in Python by setting values and clicking buttons."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_ddl.core.strategies import CATALOG
from jupyter_ddl.widgets.form import DistributeForm, load_choice
from tests.support import require


@pytest.fixture(autouse=True)
def _widgets():
    require.module("ipywidgets")


def _form(calls, notebook="nb.ipynb", backends=("local", "kubernetes"), names=None):
    def dry_run(a):
        calls.append(("dry_run", a))
        return f"apiVersion: kubeflow.org/v1\nname: {a.name}\n" + "x: 1\n" * 150

    return DistributeForm(
        submit=lambda a: calls.append(("submit", a)),
        dry_run=dry_run,
        backends=list(backends),
        notebook=notebook,
        new_name=names,
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
    # the total, and the roles it makes: Master and Worker both come from it
    assert form.role_fields == {} and form.replicas.value == 2
    assert "Master 1 + Worker 1" in form.made.value and "world size 2" in form.made.value
    form.framework.value = "tensorflow"
    form.strategy.value = "tf-parameter-server"
    assert list(form.role_fields) == ["PS", "Evaluator"]  # not counted by the total
    assert "Chief 1 + Worker 2 + PS 1" in form.made.value
    form.strategy.value = "tf-multi-worker-mirrored"
    assert list(form.role_fields) == ["Chief", "Evaluator"]
    form.role_fields["Chief"].value = 1
    assert "Chief 1 + Worker 1" in form.made.value  # the chief is one of the total
    form.strategy.value = "tf-mirrored"
    assert form.role_fields == {} and form.replicas.value == 1 and form.replicas.disabled


def test_the_total_makes_the_same_roles_as_the_flags(data_dir):
    form = _form([])
    form.framework.value = "pytorch"
    form.strategy.value = "torch-ddp"
    form.replicas.value = 1
    assert "= Master 1 <i>(world size 1)</i>" in form.made.value
    assert form.error.value == "" and not form.submit_button.disabled
    form.replicas.value = 4
    assert "Master 1 + Worker 3" in form.made.value
    form.replicas.value = 0
    assert "choose --replicas 1 or more" in form.error.value and form.submit_button.disabled
    assert form.made.value == ""


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
    form.framework.value = "tensorflow"
    form.strategy.value = "tf-parameter-server"
    form.replicas.value = 3
    form.role_fields["PS"].value = 2
    form.cpu.value = "2"
    form.dry_run_button.click()
    form.submit_button.click()
    assert [c[0] for c in calls] == ["dry_run", "submit"]
    args = calls[-1][1]
    assert (args.strategy, args.replicas, args.ps, args.cpu, args.backend) == (
        "tf-parameter-server", 3, 2, "2", "local",
    )  # fmt: skip
    saved = load_choice("nb.ipynb")
    assert saved["strategy"] == "tf-parameter-server" and saved["replicas"] == 3
    assert saved["roles"] == {"PS": 2, "Evaluator": 0}
    again = _form([])
    assert again.strategy.value == "tf-parameter-server" and again.replicas.value == 3
    assert again.role_fields["PS"].value == 2 and again.cpu.value == "2"
    other = _form([], notebook="other.ipynb")
    assert other.strategy.value == "torch-ddp" and other.replicas.value == 2  # per notebook


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
    form.replicas.value = 3
    form.name.value = "from-form"
    form.submit_button.click()
    assert form.error.value == ""
    spec, bundle = fake.submitted[-1]
    assert spec.name == "from-form" and spec.replicas == {"Master": 1, "Worker": 2}
    assert "K = 2" in bundle.files["cell.py"].decode()
    assert "from-form" in magics.dashboards
    form.submit_button.click()  # a second click while the job runs starts nothing
    assert len(fake.submitted) == 1
    form.another_button.click()  # on purpose: the same name again, the conflict shows inline
    form.name.value = "from-form"
    form.submit_button.click()
    assert "exists" in form.error.value and len(fake.submitted) == 1


def test_the_strategy_survives_switching_framework_tabs(data_dir):
    form = _form([])
    form.framework.value = "pytorch"
    form.strategy.value = "torch-elastic"
    form.framework.value = "tensorflow"
    form.strategy.value = "tf-parameter-server"
    form.framework.value = "mpi"
    form.framework.value = "pytorch"
    assert form.strategy.value == "torch-elastic"
    form.framework.value = "tensorflow"
    assert form.strategy.value == "tf-parameter-server"


def test_the_dry_run_shows_the_name_submit_uses_and_stays_collapsed(data_dir):
    calls: list = []
    names = iter(["nb-cell1-aaaaa", "nb-cell1-bbbbb", "nb-cell1-ccccc"])
    form = _form(calls, names=lambda: next(names))
    assert form.name.placeholder == "nb-cell1-aaaaa" and form.dry_run_box.layout.display == "none"
    form.dry_run_button.click()
    form.submit_button.click()
    (_, dry), (_, sub) = calls
    assert dry.name == sub.name == "nb-cell1-aaaaa"
    assert "nb-cell1-aaaaa" in form.dry_run_text.value
    assert form.dry_run_box.selected_index is None  # collapsed: 150 lines do not push
    assert form.dry_run_box.titles[0].startswith("Dry run of nb-cell1-aaaaa: 152 lines")
    assert form.name.placeholder == "nb-cell1-bbbbb"  # the next job's name, shown already
    form.another_button.click()
    form.dry_run_button.click()
    form.submit_button.click()
    assert calls[-2][1].name == calls[-1][1].name == "nb-cell1-bbbbb"


def test_submit_waits_for_the_job_unless_submit_another(data_dir):
    calls: list = []
    form = _form(calls)
    assert form.another_button.layout.display == "none"
    form.submit_button.click()
    form.submit_button.click()  # a double click: the second one starts nothing
    assert [c[0] for c in calls] == ["submit"]
    assert form.submit_button.disabled and form.another_button.layout.display is None
    form.job_ended()  # the dashboard says the job ended
    assert not form.submit_button.disabled and form.another_button.layout.display == "none"
    form.submit_button.click()
    form.another_button.click()
    assert not form.submit_button.disabled
    form.submit_button.click()
    assert [c[0] for c in calls] == ["submit"] * 3 and form.running == 2
    form.job_ended()
    assert form.submit_button.disabled  # one of the two still runs
    form.job_ended()
    assert not form.submit_button.disabled


def test_the_form_reads_every_flag_it_offers_from_the_field_of_that_name(data_dir):
    """``args()`` is made from the flag declarations (flags.py): each flag with a
    widget has a form field of its name, and the form's choice is the flags' choice."""
    from jupyter_ddl.notebook.args import parse_line, spec_from_args
    from jupyter_ddl.notebook.flags import declared

    form = _form([], names=lambda: "gen-1")
    offered = [d for d in declared() if d.meta.widget and d.meta.widget != "role"]
    assert {d.dest for d in offered} >= {"strategy", "replicas", "gpus", "backend", "name"}
    for d in offered:
        assert hasattr(getattr(form, d.dest), "value"), d.dest
    form.framework.value = "tensorflow"
    form.strategy.value = "tf-parameter-server"
    form.replicas.value = 3
    form.role_fields["PS"].value = 2
    form.gpus.value = 1
    form.cpu.value = " 2 "
    form.backend.value = "kubernetes"
    form.image.value = "img:1"
    form.gang.value = True
    form.queue.value = "q"
    flags = parse_line(
        "-s tf-parameter-server -n 3 --ps 2 --evaluator 0 --gpus 1 --cpu 2 -b kubernetes "
        "--image img:1 --gang --queue q --name gen-1"
    )
    assert form.args() == flags
    kwargs = {"name": "j", "backend": "kubernetes"}
    assert spec_from_args(form.args(), **kwargs) == spec_from_args(flags, **kwargs)
    form.backend.value = "local"  # the Kubernetes-only fields are not read then
    assert (form.args().image, form.args().gang, form.args().queue) == (None, None, None)


def test_the_form_retires_to_a_note_with_the_same_flags_once_its_jobs_ended(data_dir):
    from jupyter_ddl.notebook.args import parse_line
    from jupyter_ddl.widgets.form import flag_line

    calls: list = []
    notes: list[tuple[str, str]] = []
    count = iter(range(1, 9))
    form = _form(calls, names=lambda: f"nb-cell-{next(count)}")
    form.retire = lambda html, text: notes.append((html, text))
    form.replicas.value = 3
    form.gpus.value = 0
    form.submit_button.click()
    form.another_button.click()
    form.submit_button.click()
    form.job_ended()
    assert notes == []  # one of the two still runs: the form stays
    form.job_ended()
    assert len(notes) == 1
    html, text = notes[0]
    names = [c[1].name for c in calls]
    assert all(n and n in text for n in names) and "ddl-form-note" in html
    line = flag_line(calls[-1][1])
    assert line in text
    # the line is one the magic reads back into the same choice (but the name)
    again = parse_line(line.removeprefix("%%distribute "))
    assert (again.strategy, again.replicas) == (calls[-1][1].strategy, 3)


def test_the_gpu_field_says_per_replica_as_the_lab_dialog_does(data_dir):
    """The cell's form and the lab's Distribute dialog ask for the same number in the
    same words (--gpus is per replica)."""
    form = _form([])
    assert form.gpus.description == "GPUs per replica"
    dialog = Path(__file__).parents[2] / "labextension/src/distributeform.ts"
    assert "trans.__('GPUs per replica')" in dialog.read_text(encoding="utf-8")
