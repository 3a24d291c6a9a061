"""The dashboard's concurrency model, in one place.

Two daemon threads per followed job, none on the kernel's main thread:

* the *watch* thread consumes ``manager.watch(...)`` and folds each event into the
  DashboardState under a lock (cheap: deque appends);
* the *render* thread wakes at most ``refresh_hz`` (≤ 10) times per second and, when
  the state's version changed (or a second passed, so the elapsed time ticks), takes a
  snapshot under the lock and pushes it to the view outside the lock. However many
  lines arrive, the notebook sees ≤ 10 updates/s.

When the stream ends (job finished, detach, or the watch failed) the render thread
pushes one final snapshot and stops; ``join`` waits for that.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from jupyter_ddl.errors import DDLError
from jupyter_ddl.i18n import tr
from jupyter_ddl.models import JobEvent
from jupyter_ddl.present.state import DashboardState

log = logging.getLogger(__name__)

MAX_HZ = 10.0


class View(Protocol):
    def snapshot(self, state: DashboardState, final: bool) -> Any:
        """Build what to show from the state (called under the state lock: no I/O)."""

    def push(self, snapshot: Any, final: bool) -> None:
        """Send a snapshot to the notebook (called outside the lock)."""


EventSource = Callable[[threading.Event], Iterable[JobEvent]]


class Follower:
    """Follows one job's event stream into a DashboardState and a View."""

    def __init__(
        self,
        events: EventSource,
        state: DashboardState,
        view: View,
        *,
        refresh_hz: float = 4.0,
        on_event: Callable[[JobEvent], None] | None = None,
        on_end: Callable[[], None] | None = None,
    ) -> None:
        self.events = events
        self.state = state
        self.view = view
        self.period = 1.0 / min(max(refresh_hz, 0.1), MAX_HZ)
        self.on_event = on_event
        self.on_end = on_end  # called once, after the final snapshot was pushed
        self.stop = threading.Event()
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.render_times: deque[float] = deque(maxlen=1000)  # for rate checks
        self._threads: list[threading.Thread] = []

    def start(self) -> Follower:
        for target, kind in ((self._consume, "watch"), (self._render_loop, "render")):
            t = threading.Thread(target=target, name=f"ddl-{kind}-{self.state.name}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def run_here(self) -> Follower:
        """Consume and render on the calling thread (a job that already ended): its
        output is complete when the cell returns, so a saved notebook holds it."""
        self._consume()
        self._render(final=True)
        self._ended()
        return self

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the final snapshot was pushed; True when it was."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._threads:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            t.join(left)
        return not any(t.is_alive() for t in self._threads)

    def detach(self) -> None:
        """Stop following; the job itself keeps running."""
        with self.lock:
            self.state.detached = True
            self.state.version += 1
        self.stop.set()

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def _consume(self) -> None:
        try:
            for event in self.events(self.stop):
                with self.lock:
                    self.state.apply(event)
                if self.on_event is not None:
                    self.on_event(event)
                if self.stop.is_set():
                    break
        except DDLError as e:
            with self.lock:
                self.state.error = str(e)
        except Exception as e:
            log.exception("watching job %s failed", self.state.name)
            with self.lock:
                self.state.error = tr(
                    "following the job failed: {error!r}; `%ddl attach {name}` retries",
                    error=e, name=self.state.name,
                )  # fmt: skip
        finally:
            self.done.set()

    def _render_loop(self) -> None:
        seen, last = -1, 0.0
        while not self.done.wait(self.period):
            now = time.monotonic()
            # Re-render on change, and once a second anyway so "elapsed" keeps ticking.
            if self.state.version != seen or now - last >= 1.0:
                seen, last = self.state.version, now
                self._render(final=False)
        self._render(final=True)
        self._ended()

    def _ended(self) -> None:
        if self.on_end is not None:
            try:
                self.on_end()
            except Exception:
                log.exception("the end hook of %s failed", self.state.name)

    def _render(self, final: bool) -> None:
        try:
            with self.lock:
                snap = self.view.snapshot(self.state, final)
            self.view.push(snap, final)
        except Exception:
            log.exception("rendering the dashboard of %s failed", self.state.name)
            return
        self.render_times.append(time.monotonic())
