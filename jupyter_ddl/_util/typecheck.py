"""Does a dataclass read back from a file hold the types its fields declare?

A job file edited by hand, cut short by a crash or written by another version parses
as JSON yet may hold a string where a list belongs; without this check the wrong type
travels on and breaks whoever touches it later (the job list, a sort, a renderer),
far from the file that caused it."""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Any

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def mismatch(obj: Any, where: str = "") -> str | None:
    """The first field of dataclass ``obj`` (nested ones too) whose value does not fit
    its declared type, as ``"replicas[0].state"``; None when every one fits."""
    for f in dataclasses.fields(obj):
        if f.name.startswith("_"):
            continue
        path = f"{where}.{f.name}" if where else f.name
        bad = _misfit(getattr(obj, f.name), _hints(type(obj))[f.name], path)
        if bad:
            return bad
    return None


def _misfit(value: Any, hint: Any, path: str) -> str | None:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return None
    if origin in (typing.Union, types.UnionType):
        fits = [a for a in args if _misfit(value, a, path) is None]
        return None if fits else path
    if hint is type(None):
        return None if value is None else path
    if origin is typing.Literal:
        return None if value in args else path
    if origin in (list, tuple, set, frozenset):
        if not isinstance(value, (list, tuple, set, frozenset)):
            return path
        item = args[0] if args else Any
        for i, v in enumerate(value):
            bad = _misfit(v, item, f"{path}[{i}]")
            if bad:
                return bad
        return None
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            return path
        kt, vt = args if args else (Any, Any)
        for k, v in value.items():
            bad = _misfit(k, kt, path) or _misfit(v, vt, f"{path}[{k!r}]")
            if bad:
                return bad
        return None
    if hint is float:
        return None if isinstance(value, (int, float)) and not isinstance(value, bool) else path
    if hint is int:
        return None if isinstance(value, int) and not isinstance(value, bool) else path
    if isinstance(hint, type):
        if not isinstance(value, hint) or (isinstance(value, bool) and hint is not bool):
            return path if hint is not object else None
        if dataclasses.is_dataclass(value) and not isinstance(value, enum.Enum):
            return mismatch(value, path)
        return None
    return None  # a hint this check does not know: let it through
