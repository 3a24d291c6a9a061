"""Holding a Ctrl-C over a few lines that must not be cut in two.

A kernel interrupt is a SIGINT, which Python turns into a KeyboardInterrupt at whatever
line runs. Between starting a process and writing down that it exists, such a line is
the worst place: the process would run with nobody knowing of it. ``held_interrupt``
keeps a SIGINT that arrives inside its block and delivers it, to the handler that was
there before, as the block ends; the block must be short (it delays the user's Ctrl-C).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


@contextmanager
def held_interrupt() -> Iterator[None]:
    """Run the block with SIGINT held; a SIGINT that came meanwhile is raised again at
    its end. Off the main thread (where no signal handler can be set, and where no
    KeyboardInterrupt lands anyway) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        arrived.append(signum)

    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if arrived:  # the one who installed ``previous`` decides, as if it came now
            signal.raise_signal(signal.SIGINT)
