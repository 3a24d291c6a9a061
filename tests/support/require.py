"""Skips with a reason locally; in CI (CI or CI_STRICT set) a missing component fails."""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest

STRICT = bool(os.environ.get("CI") or os.environ.get("CI_STRICT"))


def _missing(what: str) -> None:
    if STRICT:
        pytest.fail(f"{what} is missing; scripts/setup installs it", pytrace=False)
    pytest.skip(f"{what} is missing (run scripts/setup)")


def executable(name: str) -> str:
    path = shutil.which(name)
    if not path:
        _missing(f"the program {name!r}")
    return path  # type: ignore[return-value]


def module(name: str) -> None:
    if importlib.util.find_spec(name) is None:
        _missing(f"the Python module {name!r}")
