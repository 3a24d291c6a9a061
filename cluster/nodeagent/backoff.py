"""The kubelet's restart back-off for one container (kubernetes v1.36.3
``pkg/kubelet/kuberuntime/kuberuntime_manager.go``, ``doBackOff``, over client-go's
``util/flowcontrol/backoff.go``; docs/operator-contract.md §11.13)."""

from __future__ import annotations

import time
from collections.abc import Callable

BACKOFF_START, BACKOFF_MAX = 10.0, 300.0


class Backoff:
    """The kubelet's restart back-off for one container (its ``doBackOff`` over
    client-go's ``flowcontrol.Backoff``): the first failure restarts at once and opens
    a 10 s window; each later failure waits out the window, which then doubles up to
    5 min; a window left unused for twice the cap starts over."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.window = 0.0
        self.updated: float | None = None

    def wait(self) -> float:
        """Seconds to wait before restarting a container that just failed."""
        t = self.clock()
        if self.updated is None or t - self.updated > 2 * BACKOFF_MAX:
            self.window, self.updated = BACKOFF_START, t
            return 0.0
        seconds = self.window
        self.window = min(self.window * 2, BACKOFF_MAX)
        self.updated = t + seconds  # the window is renewed when the restart happens
        return seconds
