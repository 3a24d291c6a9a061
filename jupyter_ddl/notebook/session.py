"""A kernel's jobs as its magics see them: the job started last (what a ``%ddl``
command without NAME means), the dashboards open in the notebook, following a job
and waiting for it. ``%%distribute`` fills it; the ``%ddl`` commands read it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jupyter_ddl.errors import JobFailed
from jupyter_ddl.i18n import tr
from jupyter_ddl.models import JobState
from jupyter_ddl.present.text import localized_message
from jupyter_ddl.widgets.dashboard import Dashboard

if TYPE_CHECKING:
    from jupyter_ddl.manager import JobManager
    from jupyter_ddl.widgets.views import Slot


class Session:
    def __init__(self, manager: Callable[[], JobManager], widgets: Callable[[], bool]) -> None:
        self._manager = manager
        self._widgets = widgets  # whether the front end shows widgets (else text)
        self.dashboards: dict[str, Dashboard] = {}
        self.last_job: str | None = None

    @property
    def manager(self) -> JobManager:
        return self._manager()

    def follow(
        self, name: str, backend: str | None = None, *, slot: Slot | None = None, on_end: Any = None
    ) -> Dashboard:
        """Show a live dashboard for ``name`` (logs replayed from the start); its record
        replaces it when the job ends."""
        old = self.dashboards.get(name)
        if old is not None and old.running:
            old.detach()
        dash = Dashboard(
            self.manager, name, backend=backend, widgets=self._widgets(), slot=slot,
            on_end=on_end,
        ).start()  # fmt: skip
        self.dashboards[name] = dash
        return dash

    def forget(self, name: str) -> None:
        """The job is gone: its dashboard stops following it."""
        dash = self.dashboards.pop(name, None)
        if dash is not None:
            dash.detach()

    def wait_for(self, dash: Dashboard, timeout: float | None = None) -> None:
        """Block until the followed job ends; a Failed job fails the cell (one line)."""
        try:
            done = dash.wait(timeout)
        except KeyboardInterrupt:
            print(
                tr(
                    "stopped waiting; {name} keeps running (`%ddl cancel {name}` stops it)",
                    name=dash.name,
                )
            )
            return
        if not done:
            print(
                tr(
                    "{name} is still running after {seconds} s; `%ddl wait {name}` waits again",
                    name=dash.name, seconds=f"{timeout:g}",
                )
            )  # fmt: skip
            return
        state = dash.state
        if state.state == JobState.FAILED.value:
            found = state.diagnosis()
            message = localized_message(state.message, found)
            raise JobFailed.of(dash.name, message, found.root)
