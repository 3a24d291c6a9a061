"""JSON that every parser reads: Python writes a non-finite float as ``NaN`` or
``Infinity``, which ``JSON.parse`` refuses, so one diverged job's ``loss=nan`` would break
the sidebar's whole job list. Here such a value travels as ``null`` (a chart's gap).
``plain`` turns a dataclass's ``asdict()`` into such data (enums as their values)."""

from __future__ import annotations

import json
import math
from enum import Enum
from typing import Any


def finite(value: Any) -> Any:
    """``value`` with every non-finite float (nested in dicts, lists, tuples) as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` that never writes NaN/Infinity (they become null)."""
    return json.dumps(finite(value), allow_nan=False, **kwargs)


def plain(value: Any) -> Any:
    """``asdict()`` output with enums as their values, ready for JSON."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
