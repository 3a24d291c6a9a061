"""Handing items between threads through a bounded queue without blocking forever."""

from __future__ import annotations

import queue
import threading
from typing import TypeVar

T = TypeVar("T")


def put_until_stopped(
    q: queue.Queue[T], item: T, *stops: threading.Event, poll: float = 0.2
) -> bool:
    """Put ``item``, waiting while ``q`` is full (the consumer is slow: memory stays
    bounded) but never past one of ``stops`` being set. True when it was put."""
    while not any(s.is_set() for s in stops):
        try:
            q.put(item, timeout=poll)
            return True
        except queue.Full:
            continue
    return False
