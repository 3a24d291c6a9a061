"""Split ``mpirun --tag-output`` output back into each rank's whole lines.

Open MPI tags every *chunk* it reads from a rank's pipe, not every line: a rank that
writes one line in several ``write()`` calls, or a line longer than a pipe read, shows
up as ``[1,0]<stdout>:part one[1,1]<stdout>:other rank[1,0]<stdout>:part two``.
Only the last fragment of a physical line carried the newline, so only its rank's
line is complete; the other fragments wait for theirs.
"""

from __future__ import annotations

import re

_TAG = re.compile(r"\[\d+,(\d+)\]<(stdout|stderr|stddiag)>:")

RankLine = tuple[int, str, str]  # rank, stream, text


class MpiDemux:
    """Feed the launcher's physical lines; get back complete rank lines."""

    def __init__(self) -> None:
        self._pending: dict[tuple[int, str], str] = {}

    def feed(self, line: str) -> tuple[str, list[RankLine]]:
        """``(mpirun's own text before the first tag, complete rank lines)``."""
        tags = list(_TAG.finditer(line))
        if not tags:
            return line, []
        for i, m in enumerate(tags):
            end = tags[i + 1].start() if i + 1 < len(tags) else len(line)
            key = (int(m.group(1)), _stream(m.group(2)))
            self._pending[key] = self._pending.get(key, "") + line[m.end() : end]
        last = (int(tags[-1].group(1)), _stream(tags[-1].group(2)))
        return line[: tags[0].start()], [(*last, self._pending.pop(last))]

    def flush(self) -> list[RankLine]:
        """What is left when the pipe closes (last lines without a newline)."""
        out = [(rank, stream, text) for (rank, stream), text in self._pending.items()]
        self._pending.clear()
        return out


def _stream(tag: str) -> str:
    return "stdout" if tag == "stdout" else "stderr"  # stddiag is MPI's own diagnostics
