"""``%%distribute`` and ``%ddl``: a thin layer over the job API (``JobManager``).

Errors a user can cause are shown as one line (``ShownError`` renders without a
traceback) and still fail the cell, so "Run all" stops at a bad flag or a failed
``--wait`` job instead of running on.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from typing import Any

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from jupyter_ddl import i18n
from jupyter_ddl.config import load_config
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.core.names import cell_label, generate_name
from jupyter_ddl.errors import (
    BackendUnavailable,
    CaptureError,
    DDLError,
    ShownError,
    ValidationError,
)
from jupyter_ddl.i18n import tr
from jupyter_ddl.manager import JobManager, default_manager
from jupyter_ddl.notebook.args import (
    help_text,
    parse_line,
    secret_looking,
    spec_from_args,
)
from jupyter_ddl.notebook.capture.cell import Captured, capture_cell, history_of
from jupyter_ddl.notebook.capture.requirements import read_requirements
from jupyter_ddl.notebook.commands import run_command
from jupyter_ddl.notebook.flags import DistributeArgs
from jupyter_ddl.notebook.session import Session
from jupyter_ddl.widgets.build_bar import BuildProgress
from jupyter_ddl.widgets.dashboard import Dashboard, widgets_available
from jupyter_ddl.widgets.form import DistributeForm
from jupyter_ddl.widgets.views import DisplaySlot, JobSlots, Slot, widget_bundle


@magics_class
class DDLMagics(Magics):
    def __init__(self, shell: Any, manager: JobManager | None = None) -> None:
        super().__init__(shell)
        self._manager = manager
        self.session = Session(lambda: self.manager, lambda: widgets_available(self.shell))
        self.last_form: Any = None

    @property
    def dashboards(self) -> dict[str, Dashboard]:
        return self.session.dashboards

    @property
    def last_job(self) -> str | None:
        """What `%ddl status` etc. mean without a NAME."""
        return self.session.last_job

    @property
    def ip(self) -> Any:
        """The shell these magics are registered on (never None once loaded)."""
        assert self.shell is not None
        return self.shell

    @property
    def manager(self) -> JobManager:
        return self._manager or default_manager()

    # -- %%distribute --------------------------------------------------------------------
    @cell_magic
    def distribute(self, line: str, cell: str) -> None:
        """Run this cell as a distributed training job (``%%distribute --help``)."""
        try:
            self._distribute(line, cell)
        except DDLError as e:
            raise ShownError(e) from None

    def _distribute(self, line: str, cell: str) -> None:
        _saveable(line, "the %%distribute line")
        _saveable(cell, "the cell")
        args = parse_line(line)
        if args.help:
            print(help_text())
            return
        captured = capture_cell(cell, history_of(self.shell), self.ip.user_ns, os.environ)
        for warning in captured.warnings:
            print(f"jupyter-ddl warning: {warning}", file=sys.stderr)
        if args.strategy:
            self.run_job(args, captured)
        elif widgets_available(self.shell):
            self._show_form(captured, args)
        else:
            raise ValidationError(
                tr("--strategy is missing; add --strategy NAME (`%ddl strategies` lists them)")
            )

    def _show_form(self, captured: Captured, args: DistributeArgs) -> None:
        # known now, while the cell runs: a click later comes without the cell's request
        cell_id, count = self.cell_id(), self.ip.execution_count
        slots: JobSlots | None = None

        def submit(a: DistributeArgs) -> None:
            assert slots is not None
            self.run_job(
                replace(a, wait=False, requirements=args.requirements), captured,
                slot=slots.part(), on_end=form.job_ended, cell_id=cell_id,
            )  # fmt: skip

        def dry_run(a: DistributeArgs) -> str:
            return self.run_job_text(replace(a, requirements=args.requirements), captured, cell_id)

        form = DistributeForm(
            submit=submit,
            dry_run=dry_run,
            backends=self.manager.backend_names(),
            notebook=self.notebook(),
            default_backend=self.manager.config.backend,
            new_name=lambda: self.job_name(cell_id, count),
        )
        self.last_form = form
        form_slot = DisplaySlot(initial=widget_bundle(form.widget, "the %%distribute form"))

        def retire(html: str, text: str) -> None:
            form_slot.show({"text/html": html, "text/plain": text})
            form.widget.close()  # its views are gone: nothing of it outlives the kernel

        form.retire = retire
        slots = JobSlots()  # below the form: where its jobs show, and stay when saved

    def notebook(self) -> str | None:
        """The notebook's path when the front end tells the kernel (Jupyter sets it)."""
        session = self.ip.user_ns.get("__session__") or os.environ.get("JPY_SESSION_NAME")
        return str(session) if session else None

    def cell_id(self) -> str | None:
        """The id of the cell running now, when the front end sent it (JupyterLab puts
        ``cellId`` in the execute request's metadata)."""
        kernel = getattr(self.ip, "kernel", None)
        try:
            parent = kernel.get_parent() if kernel is not None else None
        except Exception:  # noqa: BLE001 - an unusual kernel: names fall back to the count
            return None
        cell = ((parent or {}).get("metadata") or {}).get("cellId")
        return str(cell) if cell else None

    def job_name(self, cell_id: str | None, count: int | None = None) -> str:
        """A fresh name from the notebook and the cell (its id, else its run count)."""
        label = cell_label(cell_id) if cell_id else ""
        count = self.ip.execution_count if count is None else count
        return generate_name(self.notebook(), label or f"cell{count or 0}")

    def _job(
        self, args: DistributeArgs, captured: Captured, cell_id: str | None
    ) -> tuple[Any, Any]:
        """(spec, bundle) of these flags and the captured code."""
        notebook = self.notebook()
        backend = args.backend or self.manager.config.backend
        name = args.name or self.job_name(cell_id)
        spec = spec_from_args(args, name=name, backend=backend, notebook=notebook)
        spec = replace(spec, cell_id=cell_id)
        for key in secret_looking(list(spec.env)):
            said = tr(
                "--env {key} looks like a secret: its value is stored in the job's spec and "
                "shown by --dry-run; `--secret-env {key}` passes it from the kernel's "
                "environment without storing it",
                key=key,
            )
            print(f"jupyter-ddl {tr('warning')}: {said}", file=sys.stderr)
        extra = [r for value in args.requirements for r in read_requirements(value)]
        bundle = build_bundle(
            captured.code,
            requirements=[*captured.requirements, *extra],
            notebook=notebook,
            warnings=captured.warnings,
        )
        return spec, bundle

    def run_job_text(self, args: DistributeArgs, captured: Captured, cell_id: str | None) -> str:
        """The dry run of these flags, as text (the form shows it)."""
        spec, bundle = self._job(args, captured, cell_id)
        return self._dry_run_text(spec, bundle, captured)

    def run_job(
        self,
        args: DistributeArgs,
        captured: Captured,
        *,
        slot: Slot | None = None,
        on_end: Any = None,
        cell_id: str | None = None,
    ) -> Dashboard | None:
        """Flags + captured code → dry run, image build, or a submitted job with its
        dashboard (in ``slot`` when given). Every step goes through the job API."""
        spec, bundle = self._job(args, captured, cell_id or self.cell_id())
        if args.dry_run:
            print(self._dry_run_text(spec, bundle, captured))
            return None
        if args.build_only:
            self._build_only(spec, bundle)
            return None
        missing = [k for k in spec.secret_env if k not in os.environ]
        if missing:
            said = tr(
                "not set in the kernel's environment; set it (os.environ[...] or before "
                "starting Jupyter) and run the cell again"
            )
            raise ValidationError(f"--secret-env {', '.join(missing)}: {said}")
        handle = self.manager.submit(spec, bundle)
        self.session.last_job = handle.name
        # The job's name for later cells (`%ddl logs $_ddl_job`, `manager.get(_ddl_job)`).
        self.ip.user_ns["_ddl_job"] = handle.name
        dash = self.session.follow(handle.name, handle.backend, slot=slot, on_end=on_end)
        if args.wait:
            self.session.wait_for(dash, args.timeout)
        return dash

    def _dry_run_text(self, spec: Any, bundle: Any, captured: Captured) -> str:
        try:
            yaml_text = self.manager.dry_run(spec, bundle)
        except ImportError as e:
            raise BackendUnavailable(
                tr("dry run is not available in this install ({module} is missing)", module=e.name)
            ) from None
        defs = len(captured.definitions)
        out = [
            f"# captured script: {len(captured.code.splitlines())} lines, {defs} definition(s) from earlier cells",
            captured.code,
        ]
        if bundle.requirements:
            out.append("# requirements: " + " ".join(bundle.requirements))
        out.append(yaml_text)
        return "\n".join(out)

    def _build_only(self, spec: Any, bundle: Any) -> None:
        build = getattr(self.manager, "build_image", None)
        if build is None:
            raise BackendUnavailable(
                "--build-only: "
                + tr(
                    "image building is not available in this install; drop --build-only or "
                    "install jupyter-ddl with the image builder"
                )
            )

        built = build(spec, bundle, progress=BuildProgress(widgets=widgets_available(self.shell)))
        pushed = (
            "pushed"
            if getattr(built, "pushed", True)
            else "already in the registry, nothing uploaded"
        )
        print(f"image: {getattr(built, 'ref', built)} ({pushed})")

    # -- %ddl --------------------------------------------------------------------------------
    @line_magic
    def ddl(self, line: str) -> Any:
        """Jobs: ``%ddl list|status|attach|logs|cancel|delete|wait|strategies|config``."""
        try:
            return run_command(self.session, line)
        except DDLError as e:
            raise ShownError(e) from None


def _saveable(text: str, what: str) -> None:
    """Refuse text that cannot be written as UTF-8 (a lone surrogate, as a bad paste or
    a ``chr(0xD800)`` leaves), in one line naming where it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        line = text.count("\n", 0, e.start) + 1
        said = tr(
            "line {line} holds {char!r}, half of a character pair that cannot be saved as "
            "text; delete it (retype that part) and run the cell again",
            line=line, char=text[e.start],
        )  # fmt: skip
        raise CaptureError(f"{what}: {said}") from None


def load(ipython: Any, manager: JobManager | None = None) -> DDLMagics:
    """Register the magics on ``ipython``; ``manager`` replaces the default one (tests)."""
    magics = DDLMagics(ipython, manager=manager)
    ipython.register_magics(magics)
    # the config's language, read where the config is (a broken file leaves the locale)
    config = manager.config if manager is not None else load_config(warn=lambda line: None)
    language = config.language
    i18n.configure(i18n.normalize(language) if language else None)
    return magics
