"""Reading the replicas' log files: from an offset, the last N lines, or following.

Offsets count lines from 0 within one replica's file. A line is delivered only once
its newline is on disk, so a reader never sees half a line the supervisor is writing.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

from ...models import LogLine
from .jobdir import JobDir, parse_log_line


class LogFollower:
    """Incremental reader of one replica's log file."""

    def __init__(self, replica: str, path: Path, offset: int = 0) -> None:
        self.replica = replica
        self.path = path
        self.line = 0  # index of the next line to read
        self._pos = 0  # byte position of that line
        self._skip = offset

    def poll(self) -> list[LogLine]:
        """Complete lines written since the last call (lines before ``offset`` skipped)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._pos)
                chunk = f.read()
        except OSError:
            return []
        end = chunk.rfind(b"\n")
        if end < 0:
            return []
        self._pos += end + 1
        out = []
        for raw in chunk[: end + 1].decode("utf-8", "replace").splitlines():
            n, self.line = self.line, self.line + 1
            if n < self._skip:
                continue
            t, stream, text = parse_log_line(raw)
            out.append(LogLine(self.replica, n, text, t, stream))
        return out


def followers(
    jobdir: JobDir, replica: str | None, offset: int, tail: int | None
) -> list[LogFollower]:
    """One follower per replica log (or just ``replica``), positioned at offset / tail."""
    files = jobdir.log_files()
    if replica is not None:
        files = {replica: jobdir.log_path(replica)}
    out = []
    for rid, path in files.items():
        start = offset
        if tail is not None:
            start = max(offset, count_lines(path) - tail)
        out.append(LogFollower(rid, path, start))
    return out


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
    interval: float = 0.2,
) -> Iterator[LogLine]:
    """Lines of every replica (or one), in file order per replica; with ``follow``
    keep polling until ``finished()`` is true and everything written was read."""
    active = {f.replica: f for f in followers(jobdir, replica, offset, tail)}
    while True:
        done = not follow or finished()  # read before draining: no line lost at the end
        if replica is None:  # replicas whose first line appeared meanwhile
            for rid, path in jobdir.log_files().items():
                active.setdefault(rid, LogFollower(rid, path, offset))
        got = False
        for f in active.values():
            for line in f.poll():
                got = True
                yield line
        if done and not got:
            return
        if stop is not None and stop.is_set():
            return
        if not got:
            if stop is not None:
                stop.wait(interval)
            else:
                time.sleep(interval)
