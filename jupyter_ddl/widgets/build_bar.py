"""Image build progress in the cell: a widget bar, or a text bar without widgets.

Implements the image builder's callback signature ``callback(done_bytes, total_bytes)``
(``jupyter_ddl.image.progress``); called from the pushing thread, redrawn at most
``hz`` times a second.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from jupyter_ddl.i18n import tr


def _bar_text(done: int, total: int) -> str:
    frac = 1.0 if total <= 0 else min(done / total, 1.0)
    return f"{frac * 100:3.0f}% {done / 1e6:.1f}/{total / 1e6:.1f} MB"


class BuildProgress:
    """``progress(done, total)`` for ``JobManager.build_image``."""

    def __init__(self, *, widgets: bool, hz: float = 4.0, display: Any = None) -> None:
        self._interval = 1.0 / hz
        self._last = 0.0
        self.calls = 0
        self.bar: Any = None
        self.label: Any = None
        if widgets:
            import ipywidgets as w

            if display is None:
                from IPython.display import display
            self.bar = w.FloatProgress(min=0.0, max=1.0, description=tr("Uploading"))
            self.label = w.Label()
            display(w.HBox([self.bar, self.label]))

    def __call__(self, done: int, total: int) -> None:
        self.calls += 1
        now = time.monotonic()
        if done < total and now - self._last < self._interval:
            return
        self._last = now
        if self.bar is not None:
            self.bar.value = 1.0 if total <= 0 else min(done / total, 1.0)
            self.label.value = _bar_text(done, total)
            if done >= total:
                self.bar.bar_style = "success"
            return
        end = "\n" if done >= total else ""
        sys.stdout.write("\r" + tr("image upload") + " " + _bar_text(done, total) + end)
        sys.stdout.flush()
