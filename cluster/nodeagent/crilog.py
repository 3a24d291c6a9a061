"""CRI-format container logs, as the kubelet's runtime writes them and reads them back.

A line is ``<RFC3339Nano time> <stream> <tag> <text>``; the tag is ``F`` for a full line
and ``P`` for a partial one (a line longer than the runtime's buffer, or the last bytes
before the process ended without a newline). Pure functions plus one small writer.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

# the runtime splits lines longer than this into partial records
MAX_RECORD = 16 * 1024
# the kubelet's containerLogMaxSize: the current file is rotated once it reaches this
# (set by --log-max-size); the API serves only the current file
MAX_SIZE = 10 * 1024 * 1024


def stamp(t: float | None = None) -> str:
    """RFC 3339 with nanoseconds in UTC, as the container runtime writes."""
    t = time.time() if t is None else t
    whole = int(t)
    nanos = int(round((t - whole) * 1e9))
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, nanos - 1_000_000_000
    base = datetime.fromtimestamp(whole, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{nanos:09d}Z"


def records(stream: str, data: bytes, t: float | None = None) -> list[bytes]:
    """The records for one chunk of output (ending in a newline, or partial)."""
    out = []
    ts = stamp(t).encode()
    lines = data.split(b"\n")
    last_partial = lines[-1] != b""
    lines = lines if last_partial else lines[:-1]
    for i, line in enumerate(lines):
        chunks = [line[j : j + MAX_RECORD] for j in range(0, max(len(line), 1), MAX_RECORD)]
        for k, chunk in enumerate(chunks):
            full = k == len(chunks) - 1 and not (last_partial and i == len(lines) - 1)
            out.append(b"%s %s %s %s\n" % (ts, stream.encode(), b"F" if full else b"P", chunk))
    return out


@dataclass
class Record:
    time: str
    stream: str
    full: bool
    text: bytes


def parse(line: bytes) -> Record | None:
    """One record, or None for a line that is not one."""
    parts = line.rstrip(b"\n").split(b" ", 3)
    if len(parts) < 3 or parts[1] not in (b"stdout", b"stderr") or parts[2] not in (b"F", b"P"):
        return None
    text = parts[3] if len(parts) == 4 else b""
    return Record(parts[0].decode(), parts[1].decode(), parts[2] == b"F", text)


def render(recs: list[Record], timestamps: bool) -> bytes:
    """What `kubectl logs` prints for these records: partial records join their line."""
    out = bytearray()
    at_start = True
    for r in recs:
        if timestamps and at_start:
            out += r.time.encode() + b" "
        out += r.text
        if r.full:
            out += b"\n"
        at_start = r.full
    return bytes(out)


def tail(recs: list[Record], n: int) -> list[Record]:
    """The records of the last n full lines (a line's partial records stay with it)."""
    if n < 0:
        return recs
    ends = [i for i, r in enumerate(recs) if r.full]
    if n == 0:
        return []
    if len(ends) <= n:
        return recs
    return recs[ends[-n - 1] + 1 :]


def read_all(path: Path) -> list[Record]:
    if not path.exists():
        return []
    with path.open("rb") as f:
        return [r for r in (parse(line) for line in f) if r is not None]


def follow(
    path: Path, start: int, alive: callable[[], bool], poll: float = 0.2
) -> Iterator[Record]:  # type: ignore[valid-type]
    """Records written after byte offset `start`, until the container is gone and the
    file holds nothing new. A rotation (the path names a new file) is followed into the
    new file once the old one is read to its end, as the kubelet's follow does."""
    f = path.open("rb")
    ended = draining = False
    try:
        f.seek(start)
        buf = b""
        while True:
            chunk = f.readline()
            if chunk:
                buf += chunk
                if buf.endswith(b"\n"):
                    r = parse(buf)
                    buf = b""
                    if r is not None:
                        yield r
                continue
            if draining:
                # the old file is read to its end now; a torn record at its end would
                # only garble the new file's first line
                f.close()
                f, buf, draining = path.open("rb"), b"", False
                continue
            if _rotated(path, f):
                # the writer may have added lines between the read above and the
                # rename: one more pass to the old file's end before the new one
                draining = True
                continue
            if ended:
                return
            if not alive():
                # its last lines may have reached the file since the read above: one
                # more pass to the end (a traceback written as the process exits)
                ended = True
                continue
            time.sleep(poll)
    finally:
        f.close()


def _rotated(path: Path, f: BinaryIO) -> bool:
    try:
        return path.stat().st_ino != os.fstat(f.fileno()).st_ino
    except FileNotFoundError:
        return False  # between the rename and the new file: next time


def since(recs: list[Record], cutoff: float) -> list[Record]:
    """The records written at or after ``cutoff`` (epoch seconds): the times are of
    one fixed width, so they compare as text."""
    at = stamp(cutoff)
    return [r for r in recs if r.time >= at]


class Writer:
    """Appends both streams of one container run to its log file, thread-safely, and
    rotates it at ``max_size``: the full file is renamed ``<name>.<time>`` (as the
    kubelet's container log manager does) and writing goes on in a new one."""

    def __init__(self, path: Path, max_size: int | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.max_size = path, MAX_SIZE if max_size is None else max_size
        self._f: BinaryIO = path.open("ab")
        self._lock = threading.Lock()

    def pump(self, stream: str, src: BinaryIO) -> None:
        for line in iter(src.readline, b""):
            with self._lock:
                for rec in records(stream, line):
                    self._f.write(rec)
                self._f.flush()
                if self.max_size > 0 and self._f.tell() >= self.max_size:
                    self._rotate()

    def _rotate(self) -> None:
        self._f.close()
        when = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S.%f")
        self.path.rename(self.path.with_name(f"{self.path.name}.{when}"))
        self._f = self.path.open("ab")

    def close(self) -> None:
        self._f.close()
