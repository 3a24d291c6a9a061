"""The submit form ``%%distribute`` shows when no strategy is given (ipywidgets).

The form only collects choices into ``DistributeArgs``; submitting and dry runs are
callbacks the magic supplies, so the form goes through the same path as flags (and so
through the job API). "Replicas (total)" is ``--replicas`` (the replicas that train);
beside it the form shows the roles that total makes (``Master 1 + Worker 1``), and a
field for each role ``--replicas`` does not set (PS, evaluator, an optional chief). The
RoleRule limits are checked on every keystroke and Submit stays disabled while anything
is wrong. The last choice is remembered per notebook in the data directory.

One job at a time: Submit is disabled from the click until the job ends (a second
click that was already on its way is ignored), unless "Submit another" is clicked. The
job name is generated once per job and shown in the Name field, so a dry run shows the
name Submit will use. A dry run's YAML lands collapsed (an accordion) in the form.
Once no job of the form runs any more, the form gives its place in the cell to a static
note (the jobs it started, the same choice as a flags line): a saved notebook cannot show
a widget whose kernel is gone, and the jobs' own records sit below it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from jupyter_ddl._util.atomic import write_atomic
from jupyter_ddl.config import data_dir
from jupyter_ddl.core.strategies import (
    CATALOG,
    FRAMEWORK_TITLES,
    FRAMEWORKS,
    Strategy,
    by_framework,
    get_strategy,
)
from jupyter_ddl.errors import DDLError
from jupyter_ddl.i18n import tr
from jupyter_ddl.models import JobSpec
from jupyter_ddl.notebook import flags
from jupyter_ddl.notebook.args import spec_from_args
from jupyter_ddl.notebook.flags import DistributeArgs, declared
from jupyter_ddl.validation import problems

Action = Callable[[DistributeArgs], None]
DryRun = Callable[[DistributeArgs], str]


def prefs_path() -> Path:
    return data_dir() / "form-choices.json"


def load_choice(notebook: str | None) -> dict[str, Any]:
    try:
        data = json.loads(prefs_path().read_text())
    except (OSError, ValueError):
        return {}
    choice = data.get(notebook or "", {})
    return choice if isinstance(choice, dict) else {}


def save_choice(notebook: str | None, choice: dict[str, Any]) -> None:
    path = prefs_path()
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    data[notebook or ""] = choice
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True).encode(), mode=0o644)


class DistributeForm:
    """Widgets for every %%distribute choice; ``submit``/``dry_run`` get the args."""

    def __init__(
        self,
        *,
        submit: Action,
        dry_run: DryRun,
        backends: list[str],
        notebook: str | None = None,
        default_backend: str = "local",
        new_name: Callable[[], str] | None = None,
    ) -> None:
        import ipywidgets as w

        self._w = w
        self._submit, self._dry_run = submit, dry_run
        self.notebook = notebook
        self._new_name = new_name or (lambda: "")
        self.running = 0  # jobs submitted from this form that have not ended
        self.submitted: list[tuple[str, str]] = []  # (job name, the choice as flags)
        # called with (html, text) once no job of this form runs any more: the cell then
        # keeps a static note instead of a widget a saved notebook cannot show
        self.retire: Callable[[str, str], None] | None = None
        self.locked = False  # Submit waits for the running job (or "Submit another")
        self.problems: list[str] = []
        # the strategy chosen under each framework, kept across framework switches
        self.chosen: dict[str, str] = {}
        saved = load_choice(notebook)
        strategy = str(saved.get("strategy") or "")
        strategy = strategy if strategy in CATALOG else "torch-ddp"
        framework = CATALOG[strategy].framework
        self.framework = w.ToggleButtons(
            options=[(FRAMEWORK_TITLES[f], f) for f in FRAMEWORKS], value=framework
        )
        self.strategy = w.Dropdown(
            description=tr("Strategy"),
            options=self._options(framework),
            value=strategy,
            layout=w.Layout(width="32em"),
        )
        self.explanation = w.HTML()
        self.replicas = w.IntText(
            description=tr("Replicas (total)"),
            continuous_update=True,
            style={"description_width": "initial"},
        )
        self.made = w.HTML()  # the roles the total makes: "Master 1 + Worker 1"
        self.roles_box = w.VBox()
        self.role_fields: dict[str, Any] = {}
        self.gpus = w.IntText(
            description=tr("GPUs per replica"),
            value=int(saved.get("gpus", 0)),
            continuous_update=True,
            style={"description_width": "initial"},
        )
        self.cpu = w.Text(
            description=tr("CPU"), value=saved.get("cpu") or "", placeholder=tr("e.g. 2")
        )
        self.memory = w.Text(
            description=tr("Memory"), value=saved.get("memory") or "", placeholder=tr("e.g. 4Gi")
        )
        backend = saved.get("backend") if saved.get("backend") in backends else default_backend
        self.backend = w.Dropdown(description=tr("Backend"), options=backends, value=backend)
        self.image = w.Text(
            description=tr("Image"),
            value=saved.get("image") or "",
            placeholder=tr("default base image"),
        )
        self.gang = w.Checkbox(description=tr("Gang scheduling"), value=bool(saved.get("gang")))
        self.queue = w.Text(description=tr("Queue"), value=saved.get("queue") or "")
        self.kube_box = w.VBox([self.image, self.gang, self.queue])
        self.generated = self._new_name()  # the name Submit uses when Name is left empty
        self.name = w.Text(description=tr("Name"), placeholder=self.generated or tr("generated"))
        self.submit_button = w.Button(description=tr("Submit"), button_style="primary", icon="play")
        self.another_button = w.Button(description=tr("Submit another"), icon="plus")
        self.another_button.layout.display = "none"
        self.dry_run_button = w.Button(description=tr("Dry run"), icon="eye")
        for widget, cls in ((self.submit_button, "ddl-submit"), (self.name, "ddl-name"),
                            (self.another_button, "ddl-submit-another")):  # fmt: skip
            widget.add_class(cls)  # names a page can find them by
        self.error = w.HTML()
        self.output = w.Output()
        self.dry_run_text = w.HTML()
        self.dry_run_box = w.Accordion(children=[self.dry_run_text], selected_index=None)
        self.dry_run_box.layout.display = "none"
        self.submit_button.on_click(lambda _b: self._on_submit())
        self.another_button.on_click(lambda _b: self._on_another())
        self.dry_run_button.on_click(lambda _b: self._on_dry_run())
        self.framework.observe(self._framework_changed, "value")
        self.strategy.observe(lambda _c: self._strategy_changed(), "value")
        fields = (self.replicas, self.gpus, self.cpu, self.memory, self.backend, self.gang)
        for field in (*fields, self.queue):
            field.observe(lambda _c: self.check(), "value")
        self.backend.observe(lambda _c: self._show_kube(), "value")
        total = saved.get("replicas")
        roles = saved.get("roles")
        self._strategy_changed(
            total if isinstance(total, int) and not isinstance(total, bool) else None,
            roles if isinstance(roles, dict) else {},
        )
        self._show_kube()
        self.widget = w.VBox(
            [
                self.framework,
                self.strategy,
                self.explanation,
                w.HBox([self.replicas, self.made]),
                self.roles_box,
                w.HBox([self.gpus, self.cpu, self.memory]),
                self.backend,
                self.kube_box,
                self.name,
                w.HBox([self.submit_button, self.another_button, self.dry_run_button]),
                self.error,
                self.dry_run_box,
                self.output,
            ]
        )

    # -- reacting to input -------------------------------------------------------------------
    @staticmethod
    def _options(framework: str) -> list[tuple[str, str]]:
        return [(f"{s.title} ({s.name})", s.name) for s in by_framework()[framework]]

    def _framework_changed(self, change: dict[str, Any]) -> None:
        self.chosen[change["old"]] = self.strategy.value
        options = self._options(change["new"])
        names = [v for _, v in options]
        keep = self.chosen.get(change["new"])
        self.strategy.options = options
        self.strategy.value = keep if keep in names else names[0]

    def _strategy_changed(
        self, total: int | None = None, counts: dict[str, int] | None = None
    ) -> None:
        s = get_strategy(self.strategy.value)
        self.explanation.value = f"<i>{s.summary}</i>"
        fill = s.fill_role
        self.replicas.value = total if total is not None else s.default_total
        self.replicas.disabled = fill.min == fill.max  # one-replica strategies
        self.replicas.tooltip = _total_rule(s)
        self.role_fields = {}
        for rule in s.roles:
            if rule is fill or rule.min == rule.max:
                continue  # set by the total, or fixed (one Master, one Launcher)
            value = (counts or {}).get(rule.role, rule.default)
            field = self._w.IntText(
                description=rule.role, value=value, continuous_update=True,
                tooltip=f"{rule.describe()}",
            )  # fmt: skip
            field.observe(lambda _c: self.check(), "value")
            self.role_fields[rule.role] = field
        self.roles_box.children = list(self.role_fields.values())
        self.check()

    def _show_kube(self) -> None:
        self.kube_box.layout.display = None if self.backend.value == "kubernetes" else "none"

    # -- reading the choice ----------------------------------------------------------------
    def args(self) -> DistributeArgs:
        """The choice as the flags it stands for: each flag declared with a ``widget``
        (flags.py) is read from the field of its name."""
        values: dict[str, Any] = {}
        kube = self.backend.value == "kubernetes"
        for d in declared():
            kind = d.meta.widget
            if kind is None or (d.meta.kube_only and not kube):
                continue
            if kind == "role":
                if d.meta.role in self.role_fields:
                    values[d.dest] = self.role_fields[d.meta.role].value
                continue
            value = getattr(self, d.dest).value
            if kind == "text":
                value = value.strip() or None
            elif kind == "check":
                value = d.meta.bare if value else None
            values[d.dest] = value
        a = DistributeArgs(**values)
        a.name = a.name or self.generated or None
        return a

    def check(self) -> list[str]:
        """Validate the current choice; show every problem inline and disable Submit."""
        spec: JobSpec | None = None
        try:
            spec = spec_from_args(self.args(), name="form-check", backend=self.backend.value)
            found = problems(spec)
        except DDLError as e:
            found = [str(e)]
        self.made.value = _made(spec) if spec is not None and not found else ""
        self.error.value = (
            "<ul style='color:#d62728;margin:0'>"
            + "".join(f"<li>{_esc(p)}</li>" for p in found)
            + "</ul>"
            if found
            else ""
        )
        self.problems = found
        self._sync_buttons()
        return found

    def _sync_buttons(self) -> None:
        self.submit_button.disabled = bool(self.problems) or self.locked
        self.dry_run_button.disabled = bool(self.problems)
        self.another_button.layout.display = None if self.locked else "none"
        self.submit_button.tooltip = (
            tr("a job from this form is running; Submit another starts one more")
            if self.locked
            else ""
        )

    # -- acting ------------------------------------------------------------------------------
    def _on_submit(self) -> None:
        # clicks reach the kernel one after the other: a double click's second one
        # finds the form locked by the first and starts nothing
        if self.locked or self.check():
            return
        self.locked = True
        self._sync_buttons()
        args = self.args()
        save_choice(self.notebook, self._choice(args))
        self.running += 1  # before: a job that ends at once calls job_ended inside submit
        with self.output:
            try:
                self._submit(args)
            except DDLError as e:
                self.error.value = f"<span style='color:#d62728'>{_esc(str(e))}</span>"
                self.running -= 1
                self.locked = False
                self._sync_buttons()
                return
        self.submitted.append((args.name or "", flag_line(args)))
        self.name.value = ""
        self.generated = self._new_name()  # the next job's name, shown from now on
        self.name.placeholder = self.generated or "generated"

    def _on_another(self) -> None:
        self.locked = False
        self._sync_buttons()

    def _on_dry_run(self) -> None:
        if self.check():
            return
        args = self.args()
        save_choice(self.notebook, self._choice(args))
        try:
            text = self._dry_run(args)
        except DDLError as e:
            self.error.value = f"<span style='color:#d62728'>{_esc(str(e))}</span>"
            return
        lines = len(text.splitlines())
        self.dry_run_text.value = f"<pre style='font-size:12px;margin:0'>{_esc(text)}</pre>"
        title = tr("Dry run of {name}: {lines} lines of YAML", name=args.name, lines=lines)
        self.dry_run_box.titles = (title,)
        self.dry_run_box.selected_index = None  # collapsed: the dashboard stays in view
        self.dry_run_box.layout.display = None

    def job_ended(self) -> None:
        """A job submitted from this form ended: Submit is enabled again when none runs."""
        self.running = max(0, self.running - 1)
        if self.running == 0:
            self.locked = False
            self._sync_buttons()
            if self.retire is not None and self.submitted:
                self.retire(*self.note())

    def note(self) -> tuple[str, str]:
        """(html, text) the form leaves in the cell once its jobs ended: which jobs it
        started, the same choice as a flags line, how to open it again."""
        jobs = ", ".join(name for name, _ in self.submitted)
        line = self.submitted[-1][1]
        started = tr("started {jobs}.", jobs=jobs)
        same = tr("The same choice as flags: {line}", line="\0")
        again = tr("Run this cell again to open the form with these choices.")
        text = f"%%distribute form: {started} {same.replace(chr(0), line)}\n{again}"
        html = (
            f"<div class='ddl-form-note'><b>%%distribute form</b>: {_esc(started)}<br>"
            + _esc(same).replace(chr(0), f"<code>{_esc(line)}</code>")
            + f"<br>{_esc(again)}</div>"
        )
        return html, text

    def _choice(self, a: DistributeArgs) -> dict[str, Any]:
        return {
            "strategy": a.strategy,
            "replicas": a.replicas,
            "roles": {r: f.value for r, f in self.role_fields.items()},
            "gpus": a.gpus,
            "cpu": a.cpu,
            "memory": a.memory,
            "backend": a.backend,
            "image": self.image.value.strip() or None,
            "gang": self.gang.value,
            "queue": self.queue.value.strip() or None,
        }


def flag_line(a: DistributeArgs) -> str:
    """The ``%%distribute`` line of the form's choice (``flags.flag_line``), with
    ``--backend local`` unsaid: the configured default is the user's to choose."""
    return flags.flag_line(replace(a, backend=None) if a.backend == "local" else a)


def _total_rule(s: Strategy) -> str:
    fill = s.fill_role
    others = sum(r.default for r in s.counted_roles if r is not fill)
    if fill.min == fill.max:
        return tr("{strategy} runs exactly {n}", strategy=s.name, n=others + fill.min)
    return tr("{strategy} trains on {n} or more", strategy=s.name, n=others + fill.min)


def _made(spec: JobSpec) -> str:
    """``= Master 1 + Worker 1 (world size 2)``: what the total and role fields make."""
    shape = spec.shape
    size = tr("world size {n}", n=shape.world_size)
    return f"= {_esc(shape.describe())} <i>({size})</i>"


def _esc(text: str) -> str:
    from html import escape

    return escape(text)
