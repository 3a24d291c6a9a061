"""The one time format of logs and of the Kubernetes API: RFC 3339 in UTC,
``2026-11-21T23:40:01.123456Z`` (the API's fraction may be absent or nanoseconds).

Log readers parse every line (thousands per second), so the costly part, the
calendar second, is cached: a log's lines share their seconds.
"""

from __future__ import annotations

import functools
import math
from datetime import datetime, timezone

SECOND_FORMAT = "%Y-%m-%dT%H:%M:%S"


@functools.lru_cache(maxsize=64)
def second_epoch(head: str) -> int:
    """Epoch seconds of ``YYYY-MM-DDTHH:MM:SS`` (UTC); ValueError when it is not one."""
    return int(datetime.strptime(head, SECOND_FORMAT).replace(tzinfo=timezone.utc).timestamp())


def parse(stamp: str) -> float | None:
    """Epoch seconds of ``2026-11-21T23:40:01[.fraction](Z|+00:00)``; None when it is
    not one. Exact: the whole fraction over its power of ten, rounded once (so six
    digits give what ``datetime.timestamp()`` gives, to the bit)."""
    head, rest = stamp[:19], stamp[19:]
    if rest.endswith("Z"):
        rest = rest[:-1]
    elif rest.endswith("+00:00"):
        rest = rest[:-6]
    frac = rest[1:] if rest.startswith(".") else rest
    if rest and not (rest.startswith(".") and frac.isascii() and frac.isdigit()):
        return None
    try:
        whole = second_epoch(head)
    except ValueError:
        return None
    if not frac:
        return float(whole)
    scale: int = 10 ** len(frac)  # int ** int is typed Any (a negative power is a float)
    return (whole * scale + int(frac)) / scale


@functools.lru_cache(maxsize=8)
def _second_text(sec: int) -> str:
    return datetime.fromtimestamp(sec, timezone.utc).strftime(SECOND_FORMAT)


def format_micro(t: float) -> str:
    """``2026-11-21T23:40:01.123456Z`` for epoch seconds ``t`` (microseconds)."""
    # split as datetime.fromtimestamp does (modf, then round half even): same digits
    frac, whole = math.modf(t)
    sec, micro = int(whole), round(frac * 1e6)
    if micro >= 1_000_000:
        sec, micro = sec + 1, micro - 1_000_000
    elif micro < 0:
        sec, micro = sec - 1, micro + 1_000_000
    return f"{_second_text(sec)}.{micro:06d}Z"
