"""The HTTP body decoder the log multiplexer reads raw sockets with (pure)."""

from __future__ import annotations

import random

import pytest

from jupyter_ddl.backends.kubernetes.chunked import Body
from jupyter_ddl.errors import BodyError


def chunked(*parts: bytes, trailer: bytes = b"") -> bytes:
    out = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts)
    return out + b"0\r\n" + trailer + b"\r\n"


def feed_in_pieces(body: Body, wire: bytes, rng: random.Random) -> bytes:
    got, pos = [], 0
    while pos < len(wire):
        n = rng.randint(1, 9)
        got.append(body.feed(wire[pos : pos + n]))
        pos += n
    return b"".join(got)


def test_chunks_split_anywhere_give_the_payload_and_the_end():
    payload = [b"2026-11-22T10:00:00.000000001Z line one\n", b"line ", b"two\n" * 40, b"x"]
    wire = chunked(*payload)
    rng = random.Random(7)
    for _ in range(50):
        body = Body(chunked=True)
        assert feed_in_pieces(body, wire, rng) == b"".join(payload)
        assert body.done


def test_extensions_and_trailers_are_skipped_and_bytes_after_the_end_ignored():
    wire = b"5;name=value\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n"
    body = Body(chunked=True)
    assert body.feed(wire) == b"hello" and body.done
    assert body.feed(b"3\r\nnot\r\n") == b""


def test_an_unfinished_body_is_not_done():
    body = Body(chunked=True)
    assert body.feed(b"4\r\nabcd\r\n2\r\nef") == b"abcdef"
    assert not body.done  # the stream was cut: a reconnect must follow


def test_identity_bodies_count_their_length_or_run_to_eof():
    sized = Body(chunked=False, length=5)
    assert sized.feed(b"abc") == b"abc" and not sized.done
    assert sized.feed(b"defg") == b"de" and sized.done
    open_ended = Body(chunked=False)
    assert open_ended.feed(b"anything") == b"anything" and not open_ended.done


@pytest.mark.parametrize("wire", [b"zz\r\nab\r\n", b"2\r\nabXY\r\n", b"1" * 5000])
def test_garbage_is_refused(wire):
    with pytest.raises(BodyError):
        Body(chunked=True).feed(wire)
