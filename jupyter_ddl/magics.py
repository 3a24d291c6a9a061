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

from .capture import Captured, capture_cell, history_of, read_requirements
from .errors import BackendUnavailable, CaptureError, DDLError, ValidationError
from .magic_args import DistributeArgs, help_text, parse_line, secret_looking, spec_from_args
from .manager import JobManager, default_manager
from .models import JobState
from .names import generate_name
from .widgets.dashboard import Dashboard, widgets_available


class ShownError(Exception):
    """A DDLError as the cell shows it: one line, no traceback."""

    def __init__(self, error: DDLError) -> None:
        self.error = error
        super().__init__(str(error))

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31m{type(self.error).__name__}\x1b[0m: {self.error}"]


class JobFailed(DDLError):
    """A job followed with --wait / %ddl wait ended Failed."""


@magics_class
class DDLMagics(Magics):
    def __init__(self, shell: Any, manager: JobManager | None = None) -> None:
        super().__init__(shell)
        self._manager = manager
        self.dashboards: dict[str, Dashboard] = {}
        self.last_form: Any = None
        self.last_capture: Captured | None = None
        self.last_job: str | None = None  # what `%ddl status` etc. mean without a NAME

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
        captured = capture_cell(cell, history_of(self.shell), self.ip.user_ns)
        self.last_capture = captured
        for warning in captured.warnings:
            print(f"jupyter-ddl warning: {warning}", file=sys.stderr)
        if args.strategy:
            self.run_job(args, captured)
        elif widgets_available(self.shell):
            self._show_form(captured, args)
        else:
            raise ValidationError(
                "--strategy is missing; add --strategy NAME (`%ddl strategies` lists them)"
            )

    def _show_form(self, captured: Captured, args: DistributeArgs) -> None:
        from IPython.display import display

        from .widgets.form import DistributeForm

        def submit(a: DistributeArgs) -> None:
            self.run_job(replace(a, wait=False, requirements=args.requirements), captured)

        def dry_run(a: DistributeArgs) -> None:
            self.run_job(replace(a, dry_run=True, requirements=args.requirements), captured)

        form = DistributeForm(
            submit=submit,
            dry_run=dry_run,
            backends=self.manager.backend_names(),
            notebook=self.notebook(),
            default_backend=self.manager.config.backend,
        )
        self.last_form = form
        display(form.widget)

    def notebook(self) -> str | None:
        """The notebook's path when the front end tells the kernel (Jupyter sets it)."""
        session = self.ip.user_ns.get("__session__") or os.environ.get("JPY_SESSION_NAME")
        return str(session) if session else None

    def run_job(self, args: DistributeArgs, captured: Captured) -> Dashboard | None:
        """Flags + captured code → dry run, image build, or a submitted job with its
        dashboard. Every step goes through the job API."""
        from .bundle import build_bundle

        notebook = self.notebook()
        backend = args.backend or self.manager.config.backend
        name = args.name or generate_name(notebook, f"cell{self.ip.execution_count or 0}")
        spec = spec_from_args(args, name=name, backend=backend, notebook=notebook)
        for key in secret_looking(list(spec.env)):
            print(
                f"jupyter-ddl warning: --env {key} looks like a secret: its value is stored "
                f"in the job's spec and shown by --dry-run; `--secret-env {key}` passes it "
                "from the kernel's environment without storing it",
                file=sys.stderr,
            )
        extra = [r for value in args.requirements for r in read_requirements(value)]
        bundle = build_bundle(
            captured.code,
            requirements=[*captured.requirements, *extra],
            notebook=notebook,
            warnings=captured.warnings,
        )
        if args.dry_run:
            self._print_dry_run(spec, bundle, captured)
            return None
        if args.build_only:
            self._build_only(spec, bundle)
            return None
        missing = [k for k in spec.secret_env if k not in os.environ]
        if missing:
            raise ValidationError(
                f"--secret-env {', '.join(missing)}: not set in the kernel's environment; "
                "set it (os.environ[...] or before starting Jupyter) and run the cell again"
            )
        handle = self.manager.submit(spec, bundle)
        self.last_job = handle.name
        # The job's name for later cells (`%ddl logs $_ddl_job`, `manager.get(_ddl_job)`).
        self.ip.user_ns["_ddl_job"] = handle.name
        dash = self.follow(handle.name, handle.backend)
        if args.wait:
            self.wait_for(dash, args.timeout)
        return dash

    def _print_dry_run(self, spec: Any, bundle: Any, captured: Captured) -> None:
        try:
            yaml_text = self.manager.dry_run(spec, bundle)
        except ImportError as e:
            raise BackendUnavailable(
                f"dry run is not available in this install ({e.name} is missing)"
            ) from None
        defs = len(captured.definitions)
        print(
            f"# captured script: {len(captured.code.splitlines())} lines, {defs} definition(s) from earlier cells"
        )
        print(captured.code)
        if bundle.requirements:
            print("# requirements: " + " ".join(bundle.requirements))
        print(yaml_text)

    def _build_only(self, spec: Any, bundle: Any) -> None:
        build = getattr(self.manager, "build_image", None)
        if build is None:
            raise BackendUnavailable(
                "--build-only: image building is not available in this install; "
                "drop --build-only or install jupyter-ddl with the image builder"
            )
        from .widgets.progress import BuildProgress

        built = build(spec, bundle, progress=BuildProgress(widgets=widgets_available(self.shell)))
        pushed = (
            "pushed"
            if getattr(built, "pushed", True)
            else "already in the registry, nothing uploaded"
        )
        print(f"image: {getattr(built, 'ref', built)} ({pushed})")

    # -- following jobs ------------------------------------------------------------------
    def follow(self, name: str, backend: str | None = None) -> Dashboard:
        """Show a live dashboard for ``name`` (logs replayed from the start)."""
        old = self.dashboards.get(name)
        if old is not None and old.running:
            old.detach()
        dash = Dashboard(
            self.manager, name, backend=backend, widgets=widgets_available(self.shell)
        ).start()
        self.dashboards[name] = dash
        return dash

    def wait_for(self, dash: Dashboard, timeout: float | None = None) -> None:
        """Block until the followed job ends; a Failed job fails the cell (one line)."""
        try:
            done = dash.wait(timeout)
        except KeyboardInterrupt:
            print(
                f"stopped waiting; {dash.name} keeps running (`%ddl cancel {dash.name}` stops it)"
            )
            return
        if not done:
            print(
                f"{dash.name} is still running after {timeout:g} s; `%ddl wait {dash.name}` waits again"
            )
            return
        state = dash.state
        if state.state == JobState.FAILED.value:
            raise JobFailed(
                f"job {dash.name} failed: {state.message or 'a replica failed'}; "
                f"`%ddl logs {dash.name}` shows every line"
            )

    # -- %ddl --------------------------------------------------------------------------------
    @line_magic
    def ddl(self, line: str) -> Any:
        """Jobs: ``%ddl list|status|attach|logs|cancel|delete|wait|strategies|config``."""
        from .ddl_commands import run_command

        try:
            return run_command(self, line)
        except DDLError as e:
            raise ShownError(e) from None


def _saveable(text: str, what: str) -> None:
    """Refuse text that cannot be written as UTF-8 (a lone surrogate, as a bad paste or
    a ``chr(0xD800)`` leaves), in one line naming where it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        line = text.count("\n", 0, e.start) + 1
        raise CaptureError(
            f"{what}: line {line} holds {text[e.start]!r}, half of a character pair that "
            "cannot be saved as text; delete it (retype that part) and run the cell again"
        ) from None


def load(ipython: Any, manager: JobManager | None = None) -> DDLMagics:
    """Register the magics on ``ipython``; ``manager`` replaces the default one (tests)."""
    magics = DDLMagics(ipython, manager=manager)
    ipython.register_magics(magics)
    return magics
