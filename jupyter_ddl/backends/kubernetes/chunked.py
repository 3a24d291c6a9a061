"""HTTP/1.1 response bodies decoded incrementally from raw socket bytes (pure).

The log multiplexer reads many follow streams from non-blocking sockets, so it cannot
let ``http.client`` read the body (that blocks until a whole chunk or line is in).
``Body`` undoes the chunked transfer coding (or counts a Content-Length, or reads to
EOF) from whatever bytes have arrived, and says when the body is complete.
"""

from __future__ import annotations

from jupyter_ddl.errors import BodyError

_MAX_SIZE_LINE = 4096  # a chunk-size line longer than this is not HTTP


class Body:
    """Decoder of one response body: ``feed`` raw bytes, get payload bytes back."""

    def __init__(self, *, chunked: bool, length: int | None = None) -> None:
        self.chunked = chunked
        self.left = length  # identity coding: bytes still expected (None: until EOF)
        self.done = not chunked and length == 0
        self._buf = b""  # undecoded bytes: a partial size line or CRLF
        self._in_chunk = 0  # payload bytes left in the current chunk
        self._state = "size"  # size | data | crlf | trailer

    def feed(self, data: bytes) -> bytes:
        """Payload carried by ``data`` (possibly empty); raises BodyError on garbage."""
        if self.done:
            return b""
        if not self.chunked:
            if self.left is None:
                return data
            data = data[: self.left]
            self.left -= len(data)
            self.done = self.left == 0
            return data
        return self._chunks(self._buf + data if self._buf else data)

    def _chunks(self, data: bytes) -> bytes:
        out: list[bytes] = []
        pos, end = 0, len(data)
        self._buf = b""
        while pos < end and not self.done:
            if self._state == "data":
                take = min(self._in_chunk, end - pos)
                out.append(data[pos : pos + take])
                pos += take
                self._in_chunk -= take
                if self._in_chunk == 0:
                    self._state = "crlf"
                continue
            cut = data.find(b"\n", pos)
            if cut < 0:
                self._buf = data[pos:]
                if len(self._buf) > _MAX_SIZE_LINE:
                    raise BodyError("chunk-size line too long")
                break
            line = data[pos:cut].rstrip(b"\r")
            pos = cut + 1
            if self._state == "crlf":
                if line:
                    raise BodyError("chunk data not followed by CRLF")
                self._state = "size"
            elif self._state == "size":
                size = line.split(b";", 1)[0].strip()
                try:
                    self._in_chunk = int(size, 16)
                except ValueError:
                    raise BodyError(f"bad chunk size {size[:20]!r}") from None
                self._state = "data" if self._in_chunk else "trailer"
            elif not line:  # trailer: fields until an empty line end the body
                self.done = True
        return b"".join(out)
