"""Reading the replicas' log files: from an offset, the last N lines, or following.

Offsets count lines from 0 within one replica's file. ``report()`` lines stay in the
file (the metrics are read from there) but readers leave them out unless asked for
the raw log: offsets then skip them, and a tail counts the lines a person reads.
A line is delivered only once
its newline is on disk, so a reader never sees half a line the supervisor is writing.
Each poll reads at most ``READ_BUDGET`` bytes per replica: a reader's memory stays
bounded however far behind it is, and one chatty replica cannot starve the others.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from jupyter_ddl.backends.local.jobdir import JobDir, parse_log_line, parse_log_lines
from jupyter_ddl.core.metrics import METRIC_MARKER, is_metric_line
from jupyter_ddl.models import EventKind, JobEvent, LogLine

#: bytes one poll reads from one replica's log (a few thousand typical lines)
READ_BUDGET = 256 * 1024
#: seconds between polls while lines flow (batches them), and the longest idle wait
#: (a poll of an idle job is a stat and an empty read per replica: cheap; a job's
#: first lines after its start-up arrive at most this late)
POLL_BUSY = 0.03
POLL_IDLE = 0.1


class LogEvents:
    """LOG events of one job, built by filling a copy of a template's fields.

    ``JobEvent`` is a frozen dataclass whose generated ``__init__`` sets each of its ten
    fields through ``object.__setattr__``: at thousands of lines a second that was the
    biggest cost left in the watch loop. The template carries every default, so a
    field added to JobEvent later keeps its default here (a test compares the result
    with the regular constructor). JobEvent must stay a plain dataclass (no slots,
    no ``__post_init__``)."""

    def __init__(self, job: str) -> None:
        self._template = dict(vars(JobEvent(EventKind.LOG, job)))

    def __call__(self, line: LogLine, now: float) -> JobEvent:
        event = object.__new__(JobEvent)
        values = self._template.copy()
        values["time"], values["replica"], values["log"] = now, line.replica, line
        object.__setattr__(event, "__dict__", values)
        return event


class LogFollower:
    """Incremental reader of one replica's log file."""

    def __init__(
        self, replica: str, path: Path, offset: int = 0, *, budget: int = READ_BUDGET
    ) -> None:
        self.replica = replica
        self.path = path
        self.line = 0  # index of the next line to read
        self._pos = 0  # byte position of that line
        self._skip = offset
        self.budget = max(1, budget)
        self.behind = False  # the last poll stopped at its budget: more is waiting

    def poll(self) -> list[LogLine]:
        """Complete lines written since the last call (lines before ``offset`` skipped),
        about ``budget`` bytes of them at most; ``behind`` says whether more wait."""
        chunk = self._read()
        end = chunk.rfind(b"\n")
        if end < 0:
            return []
        self._pos += end + 1
        if self.line < self._skip:  # lines before the offset: count them, decode none
            count = chunk.count(b"\n", 0, end + 1)
            if self.line + count <= self._skip:
                self.line += count
                return []
        # split on "\n" only (not str.splitlines): offsets must count what count_lines
        # counts, whatever form feeds or U+2028 a line holds.
        raws = chunk[:end].decode("utf-8", "replace").split("\n")
        first = self.line
        self.line += len(raws)
        if first < self._skip:
            raws = raws[self._skip - first :]
            first = self._skip
        replica = self.replica
        return [
            LogLine(replica, n, text, t, stream)
            for n, (t, stream, text) in enumerate(parse_log_lines(raws), first)
        ]

    def _read(self) -> bytes:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._pos)
                chunk = f.read(self.budget)
                self.behind = len(chunk) >= self.budget
                if self.behind and b"\n" not in chunk:
                    chunk += _rest_of_line(f, self.budget)  # one line longer than the budget
        except OSError:
            self.behind = False
            return b""
        return chunk


def _rest_of_line(f: BinaryIO, size: int) -> bytes:
    """What follows up to and including the next newline (or all there is)."""
    parts = []
    while True:
        part = f.read(size)
        if not part:
            break
        cut = part.find(b"\n")
        if cut >= 0:
            parts.append(part[: cut + 1])
            break
        parts.append(part)
    return b"".join(parts)


def followers(
    jobdir: JobDir, replica: str | None, offset: int, tail: int | None, raw: bool = True
) -> list[LogFollower]:
    """One follower per replica log (or just ``replica``), positioned at offset / tail
    (``raw``: a tail of every line, else of the lines a person reads)."""
    files = jobdir.log_files()
    if replica is not None:
        files = {replica: jobdir.log_path(replica)}
    out = []
    for rid, path in files.items():
        start = offset
        if tail is not None:
            first = count_lines(path) - tail if raw else user_tail_start(path, tail)
            start = max(offset, first)
        out.append(LogFollower(rid, path, start))
    return out


_MARKER = METRIC_MARKER.encode()


def user_tail_start(path: Path, tail: int) -> int:
    """The offset where the last ``tail`` lines that are not ``report()`` lines begin."""
    starts: deque[int] = deque(maxlen=max(tail, 1))
    n = 0
    try:
        with open(path, "rb") as f:
            for raw in f:
                if not raw.endswith(b"\n"):
                    break  # a line still being written is not delivered yet
                if _MARKER not in raw:
                    starts.append(n)
                n += 1
    except OSError:
        return 0
    if tail <= 0:
        return n
    return starts[0] if len(starts) == tail else 0


def count_lines(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 16), b""))
    except OSError:
        return 0


def last_lines(path: Path, n: int) -> list[str]:
    """The text of the last ``n`` lines of a log file."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            kept = deque(f, maxlen=n)
    except OSError:
        return []
    return [parse_log_line(line)[2] for line in kept]


def iter_logs(
    jobdir: JobDir,
    *,
    replica: str | None = None,
    offset: int = 0,
    tail: int | None = None,
    follow: bool = False,
    stop: threading.Event | None = None,
    finished: Callable[[], bool] = lambda: True,
    interval: float = POLL_IDLE,
    raw: bool = False,
) -> Iterator[LogLine]:
    """Lines of every replica (or one), in file order per replica; with ``follow``
    keep polling until ``finished()`` is true and everything written was read.
    ``report()`` lines only with ``raw``."""
    active = {f.replica: f for f in followers(jobdir, replica, offset, tail, raw)}
    pause = Pacer(interval)
    while True:
        done = not follow or finished()  # read before draining: no line lost at the end
        if replica is None:  # replicas whose first line appeared meanwhile
            for rid, path in jobdir.log_files().items():
                active.setdefault(rid, LogFollower(rid, path, offset))
        got, behind = False, False
        for f in active.values():
            for line in f.poll():
                got = True
                if raw or not is_metric_line(line.text):
                    yield line
            behind = behind or f.behind
        if done and not got and not behind:  # (a poll may skip a budget's worth)
            return
        if stop is not None and stop.is_set():
            return
        delay = pause.next(got, behind)
        if delay and not done:  # the job ended (or no follow): drain without pausing
            if stop is not None:
                stop.wait(delay)
            else:
                time.sleep(delay)


class Pacer:
    """How long to wait before the next poll: none while a follower is behind its
    budget, a short batching pause while lines flow, backing off to ``idle`` when
    quiet, so a busy job is read promptly and an idle one costs little."""

    def __init__(self, idle: float = POLL_IDLE, busy: float = POLL_BUSY) -> None:
        self.idle = idle
        self.busy = min(busy, idle)
        self.delay = self.busy

    def next(self, got: bool, behind: bool) -> float:
        if behind:
            self.delay = self.busy
            return 0.0
        if got:
            self.delay = self.busy
        else:
            self.delay = min(self.idle, self.delay * 1.5)
        return self.delay
