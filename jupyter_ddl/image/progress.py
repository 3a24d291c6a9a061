"""Accounting and progress for a build: request/byte counters and a text progress bar.

Progress callbacks have the signature ``callback(done_bytes: int, total_bytes: int)``;
they are called (one call at a time, under a lock) from the push's worker threads,
after each uploaded or copied piece, and once with ``done == total`` at the end; only
when the bytes to move reach ``PROGRESS_THRESHOLD``. The notebook widget implements
the same signature; ``TextProgress`` is the fallback for terminals and plain outputs.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TextIO

ProgressCallback = Callable[[int, int], None]

#: uploads smaller than this show no bar (a code layer is a few KB)
PROGRESS_THRESHOLD = 8 * 1024 * 1024


_STATS_LOCK = threading.Lock()


@dataclass
class Stats:
    """What a build cost on the wire (registry requests; token requests counted apart)."""

    requests: int = 0
    bytes_up: int = 0
    bytes_down: int = 0
    token_requests: int = 0
    blobs_uploaded: int = 0
    blobs_mounted: int = 0
    blobs_skipped: int = 0

    def count(self, **amounts: int) -> None:
        """Add to counters; safe from the push's worker threads."""
        with _STATS_LOCK:
            for k, v in amounts.items():
                setattr(self, k, getattr(self, k) + v)

    def add(self, other: Stats) -> None:
        for k, v in asdict(other).items():
            setattr(self, k, getattr(self, k) + v)


class TextProgress:
    """A one-line text bar, redrawn at most ``hz`` times a second."""

    def __init__(self, stream: TextIO | None = None, *, width: int = 30, hz: float = 4.0) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self._interval = 1.0 / hz
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self._last < self._interval:
            return
        self._last = now
        self.stream.write("\r" + render_bar(done, total, self.width))
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


def render_bar(done: int, total: int, width: int = 30) -> str:
    """``[#######-------]  42% 84.0/200.0 MB``"""
    frac = 1.0 if total <= 0 else min(done / total, 1.0)
    filled = int(round(frac * width))
    return f"[{'#' * filled}{'-' * (width - filled)}] {frac * 100:3.0f}% {done / 1e6:.1f}/{total / 1e6:.1f} MB"
