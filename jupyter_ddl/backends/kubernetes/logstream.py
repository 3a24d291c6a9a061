"""One container's log stream as the multiplexer reads it: its connection state, the
socket taken over from the client, and the bytes decoded into lines."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable
from typing import Any

from jupyter_ddl.backends.kubernetes.chunked import Body
from jupyter_ddl.backends.kubernetes.items import Batch
from jupyter_ddl.backends.kubernetes.logs import split_timestamp
from jupyter_ddl.errors import BodyError

READ_CAP = 256 * 1024  # bytes read from one stream per wake-up: no stream starves others
FIRST_DELAY, MAX_DELAY = 0.2, 5.0  # reconnect backoff while a container still runs
CLOCK_MARGIN = 10  # seconds added to a reconnect's sinceSeconds: the API server's clock may differ
_WOULD_BLOCK = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


class Stream:
    """One container followed (possibly over several connections)."""

    def __init__(self, pod: str, container: str | None, cid: str | None, rid: str) -> None:
        self.pod, self.container, self.cid, self.rid = pod, container, cid, rid
        self.delivered = 0  # lines handed on
        # A reconnect cannot skip by count: the kubelet serves only the current log
        # file, rotated at containerLogMaxSize (operator-contract.md §11.7). It asks
        # from the last timestamp delivered and drops what it delivered already.
        self.last_stamp: float | None = None
        self.at_last: set[str] = set()  # texts delivered with ``last_stamp``
        self.opens = 0  # connections made so far
        self.broken = False  # the last connection ended before the log did
        self.delay = FIRST_DELAY
        self.done = threading.Event()
        self.then: list[Stream] = []  # later containers of the same replica, waiting
        self.start: Callable[[Stream], None] | None = None  # how to begin once it may
        self._reset()

    def _reset(self) -> None:
        self.resp: Any = None
        self.sock: socket.socket | None = None
        self.body: Body | None = None
        self.pending = b""  # a line whose newline has not arrived
        self.seen = 0  # lines of the current connection

    def take(self, stamp: float | None, text: str) -> bool:
        """Is (stamp, text) a line not delivered before? Records it when it is."""
        last = self.last_stamp
        if (stamp is not None and last is not None
                and (stamp < last or (stamp == last and text in self.at_last))):  # fmt: skip
            return False
        if stamp is not None:
            if last is None or stamp > last:
                self.last_stamp, self.at_last = stamp, {text}
            else:
                self.at_last.add(text)
        self.delivered += 1
        return True

    def since_seconds(self, now: float) -> int | None:
        """``sinceSeconds`` for a reconnect: back to the last line delivered, with a
        margin for the API server's clock (what it sends again is dropped by ``take``).
        The client has no ``sinceTime``; both mean the same to the kubelet."""
        if self.last_stamp is None:
            return None
        return max(1, int(now - self.last_stamp) + CLOCK_MARGIN)

    def is_alive(self) -> bool:
        return not self.done.is_set()

    def feed(self, raw: bytes, eof: bool) -> tuple[Batch, bool, bool]:
        """Decode what arrived: (lines not delivered before, whether the log ended
        cleanly, whether this connection is over)."""
        assert self.body is not None
        try:
            data = self.body.feed(raw)
        except BodyError:
            data, eof = b"", True
        clean = self.body.done or (eof and not self.body.chunked and self.body.left is None)
        if data:
            self.delay = FIRST_DELAY  # it delivers: a later cut reconnects at once
            *lines, self.pending = (self.pending + data).split(b"\n")
        else:
            lines = []
        if clean and self.pending:  # the last line of a finished log has no newline
            lines.append(self.pending)
            self.pending = b""
        batch: Batch = []
        for raw_line in lines:
            self.seen += 1
            stamp, text = split_timestamp(raw_line.decode("utf-8", "replace").rstrip("\r"))
            if self.take(stamp, text):
                batch.append((stamp, text))
        return batch, clean, clean or eof


def read_some(sock: socket.socket) -> tuple[bytes, bool]:
    """What a non-blocking socket holds now (up to ``READ_CAP``), and whether it ended."""
    parts, size, eof = [], 0, False
    while size < READ_CAP:
        try:
            data = sock.recv(65536)
        except _WOULD_BLOCK:
            break
        except OSError:
            eof = True
            break
        if not data:
            eof = True
            break
        parts.append(data)
        size += len(data)
    return b"".join(parts), eof


def take_over(resp: Any) -> tuple[socket.socket, bytes, Body] | None:
    """The response's socket (made non-blocking), the body bytes ``http.client`` already
    buffered past the headers, and a decoder; None when the client's internals differ
    from urllib3's (then the stream gets a blocking reader instead)."""
    raw = getattr(resp, "_fp", None)  # http.client.HTTPResponse
    conn = getattr(resp, "connection", None) or getattr(resp, "_connection", None)
    sock = getattr(conn, "sock", None)
    fp = getattr(raw, "fp", None)
    if raw is None or not isinstance(sock, socket.socket) or fp is None:
        return None
    if getattr(raw, "chunk_left", None) is not None:  # http.client is inside a chunk
        return None
    chunked = bool(getattr(raw, "chunked", False))
    body = Body(chunked=chunked, length=None if chunked else getattr(raw, "length", None))
    sock.setblocking(False)
    try:
        head = fp.read1(1 << 20) or b""
    except (*_WOULD_BLOCK, ValueError):
        head = b""
    return sock, head, body
