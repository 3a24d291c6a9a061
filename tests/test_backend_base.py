"""What every backend inherits from ``Backend``: the one ``logs`` signature."""

from __future__ import annotations

import dataclasses
import typing

from jupyter_ddl.backends.base import LogOptions, LogQuery


def test_log_options_and_log_query_name_the_same_things():
    """``LogOptions`` types the keywords of ``logs()``; ``LogQuery`` holds them with
    their defaults: one must not grow without the other."""
    hints = typing.get_type_hints(LogOptions)
    fields = {f.name: f.type for f in dataclasses.fields(LogQuery)}
    assert list(hints) == list(fields)
