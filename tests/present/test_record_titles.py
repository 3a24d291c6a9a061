"""A replica log's size in the record reads as words: never "1 lines"."""

from __future__ import annotations

import pytest

from jupyter_ddl.present.record import lines_title


@pytest.mark.parametrize(
    ("kept", "total", "words"),
    [
        (0, 0, "no lines"),
        (1, 1, "1 line"),
        (3, 3, "all 3 lines"),
        (5, 40, "last 5 of 40 lines"),
    ],
)
def test_lines_title(kept, total, words):
    assert lines_title(kept, total) == words
