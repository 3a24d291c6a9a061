"""The job dashboard shown in a cell's output: a view over the job API.

``Dashboard(manager, name, ...).start()`` displays the view and follows the job on
background threads (see ``follow.py``); the cell returns at once. ``wait()`` blocks
until the job ended and its record replaced the live view. Cancel and Detach go
through the same manager every other surface uses.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

from jupyter_ddl.config import Config
from jupyter_ddl.errors import DDLError
from jupyter_ddl.manager import JobManager
from jupyter_ddl.models import EventKind, JobEvent
from jupyter_ddl.present.state import DashboardState
from jupyter_ddl.widgets.follow import Follower
from jupyter_ddl.widgets.views import DisplayFn, DisplaySlot, Slot, TextView, WidgetView


def widgets_available(shell: Any = None) -> bool:
    """Widgets render only in a kernel with a front end; ``JUPYTER_DDL_WIDGETS=0/1``
    overrides the guess (tests, terminals)."""
    forced = os.environ.get("JUPYTER_DDL_WIDGETS")
    if forced is not None:
        return forced.strip().lower() in ("1", "true", "yes", "on")
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return shell is not None and getattr(shell, "kernel", None) is not None


class Dashboard:
    """Live view of one job; ``from_start`` replays the logs already written."""

    def __init__(
        self,
        manager: JobManager,
        name: str,
        *,
        backend: str | None = None,
        config: Config | None = None,
        widgets: bool = False,
        from_start: bool = True,
        display: DisplayFn | None = None,
        slot: Slot | None = None,
        on_end: Callable[[], None] | None = None,
    ) -> None:
        cfg = config or manager.config
        self.manager = manager
        self.name = name
        self.backend = backend
        self.from_start = from_start
        self.state = DashboardState(name, tail=cfg.log_tail)
        self.refresh_hz = cfg.refresh_hz
        self.widgets = widgets
        self.display = display
        self.slot = slot  # where it draws; a display output of its own when None
        self.on_end = on_end  # after the record was written (the form re-enables Submit)
        self.view: TextView | WidgetView | None = None
        self.follower: Follower | None = None

    def start(self) -> Dashboard:
        self._prefill()
        slot = self.slot or DisplaySlot(self.display)
        if self.widgets:
            self.view = WidgetView(
                self.state, slot, on_cancel=self._cancel_async, on_detach=self.detach
            )
        else:
            self.view = TextView(self.state, slot)
        self.follower = Follower(
            self._events, self.state, self.view, refresh_hz=self.refresh_hz, on_end=self.on_end
        )
        if self.state.finished:
            self.follower.run_here()  # nothing live to follow: replay now, output complete
        else:
            self.follower.start()
        return self

    def _prefill(self) -> None:
        try:
            status = self.manager.get(self.name, self.backend)
        except DDLError:
            return  # the watch reports it

        self.state.apply(JobEvent(EventKind.STATUS, self.name, status=status))

    def _events(self, stop: threading.Event) -> Iterable[JobEvent]:
        return self.manager.watch(
            self.name, backend=self.backend, stop=stop, from_start=self.from_start
        )

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the stream ended and the final output was written; True if so."""
        return self.follower.join(timeout) if self.follower else True

    def cancel(self) -> None:
        """Cancel the job (button or ``%ddl cancel``); errors show in the header."""
        try:
            self.manager.cancel(self.name, self.backend)
        except DDLError as e:
            if self.follower:
                with self.follower.lock:
                    self.state.error = str(e)
                    self.state.version += 1

    def _cancel_async(self) -> None:
        # A button click runs on the kernel's main thread; stopping replicas can take
        # seconds, so the kernel stays free while it happens.
        threading.Thread(target=self.cancel, name=f"ddl-cancel-{self.name}", daemon=True).start()

    def detach(self) -> None:
        """Stop following; the job keeps running."""
        if self.follower:
            self.follower.detach()

    @property
    def running(self) -> bool:
        return bool(self.follower and self.follower.running)
