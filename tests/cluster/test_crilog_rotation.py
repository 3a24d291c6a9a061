"""The node agent's CRI log files rotated at a configurable size, as the kubelet's
containerLogMaxSize does: the full file renamed aside, a follow that carries on into
the new file (nothing lost or repeated), and sinceTime/sinceSeconds cutoffs."""

from __future__ import annotations

import io
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cluster"))

from nodeagent import crilog, server


def lines_of(n: int, width: int = 60) -> bytes:
    return b"".join(b"line %04d %s\n" % (i, b"x" * width) for i in range(n))


def test_the_writer_rotates_at_its_size_and_keeps_every_line(tmp_path):
    path = tmp_path / "0.log"
    w = crilog.Writer(path, max_size=1024)
    w.pump("stdout", io.BytesIO(lines_of(100)))
    w.close()
    rotated = sorted(tmp_path.glob("0.log.*"))
    assert len(rotated) >= 5, rotated
    assert all(1024 <= p.stat().st_size < 1024 + 200 for p in rotated)
    # the API reads the current file only: fewer lines than were written
    current = crilog.read_all(path)
    assert len(current) < 100
    # but across the files every line is there once, in order
    every = [r.text for p in [*rotated, path] for r in crilog.read_all(p)]
    assert every == [b"line %04d %s" % (i, b"x" * 60) for i in range(100)]


def test_a_follow_goes_on_into_the_new_file_after_a_rotation(tmp_path):
    path = tmp_path / "0.log"
    w = crilog.Writer(path, max_size=2048)
    done = threading.Event()
    got: list[bytes] = []

    def follow() -> None:
        got.extend(r.text for r in crilog.follow(path, 0, lambda: not done.is_set(), poll=0.01))

    reader = threading.Thread(target=follow)
    reader.start()
    for i in range(200):  # slowly enough that the follower sees each file in turn
        w.pump("stdout", io.BytesIO(b"line %04d %s\n" % (i, b"y" * 40)))
        if i % 20 == 0:
            time.sleep(0.02)
    w.close()
    time.sleep(0.1)
    done.set()
    reader.join(5)
    assert len(sorted(tmp_path.glob("0.log.*"))) >= 3
    assert got == [b"line %04d %s" % (i, b"y" * 40) for i in range(200)]


def test_since_keeps_the_records_from_the_cutoff():
    recs = [
        crilog.parse(r) for t in (10.0, 20.0, 30.0) for r in crilog.records("stdout", b"at\n", t)
    ]
    assert [r.time[:19] for r in crilog.since(recs, 20.0)] == [
        "1970-01-01T00:00:20",
        "1970-01-01T00:00:30",
    ]
    assert server.since_arg({"sinceTime": ["1970-01-01T00:00:20Z"]}) == 20.0
    assert abs(server.since_arg({"sinceSeconds": ["5"]}) - (time.time() - 5)) < 1
    assert server.since_arg({}) is None


def test_a_follow_reads_what_reached_the_file_as_the_container_ended(tmp_path):
    """The process has exited, and its last lines (a traceback) reach the file just as
    the follow asks whether it still runs: the follow reads them before it ends."""
    path = tmp_path / "0.log"
    w = crilog.Writer(path)
    w.pump("stdout", io.BytesIO(b"rank 1: reading my data shard\n"))

    def alive() -> bool:
        # the exit is seen after the pumps wrote the rest, before the follow read it
        w.pump("stderr", io.BytesIO(b"Traceback (most recent call last):\nValueError: corrupt\n"))
        return False

    got = [r.text for r in crilog.follow(path, 0, alive, poll=0.01)]
    w.close()
    assert got == [b"rank 1: reading my data shard", b"Traceback (most recent call last):",
                   b"ValueError: corrupt"]  # fmt: skip


def test_lines_written_just_before_a_rotation_are_not_lost(tmp_path, monkeypatch):
    # the race the harness's CI hit: the follower reads the old file to its end, the
    # writer adds two lines and rotates, and only then does the follower look at the path
    path = tmp_path / "0.log"
    w = crilog.Writer(path, max_size=0)
    w.pump("stdout", io.BytesIO(lines_of(3)))
    real = crilog._rotated
    raced = []

    def rotated_after_a_write(p, f):
        if not raced:
            raced.append(True)
            w.pump("stdout", io.BytesIO(b"line 0003 late\nline 0004 late\n"))
            w._rotate()
            w.pump("stdout", io.BytesIO(b"line 0005 new\n"))
        return real(p, f)

    monkeypatch.setattr(crilog, "_rotated", rotated_after_a_write)
    alive = iter([True, True, False])
    got = [r.text for r in crilog.follow(path, 0, lambda: next(alive, False), poll=0.01)]
    w.close()
    assert got[3:] == [b"line 0003 late", b"line 0004 late", b"line 0005 new"]
    assert len(got) == 6
