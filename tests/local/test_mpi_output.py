"""Reassembling `mpirun --tag-output` chunks into whole rank lines (pure)."""

from __future__ import annotations

from jupyter_ddl.backends.local.mpi_output import MpiDemux


def test_one_tag_per_line_passes_through():
    d = MpiDemux()
    assert d.feed("[1,0]<stdout>:hello") == ("", [(0, "stdout", "hello")])
    assert d.feed("[1,1]<stderr>:oops") == ("", [(1, "stderr", "oops")])


def test_interleaved_chunks_wait_for_their_newline():
    d = MpiDemux()
    own, done = d.feed("[1,0]<stdout>:part one [1,1]<stdout>:rank one line")
    assert own == "" and done == [(1, "stdout", "rank one line")]
    assert d.feed("[1,0]<stdout>:part two") == ("", [(0, "stdout", "part one part two")])


def test_long_line_split_into_many_tagged_chunks():
    d = MpiDemux()
    chunks = "".join(f"[1,2]<stdout>:{'y' * 4096}" for _ in range(3))
    assert d.feed(chunks) == ("", [(2, "stdout", "y" * 12288)])


def test_untagged_text_is_mpiruns_own_and_leftovers_flush():
    d = MpiDemux()
    assert d.feed("mpirun noticed that ...") == ("mpirun noticed that ...", [])
    d.feed("[1,0]<stdout>:no newline yet[1,1]<stdout>:x")
    assert d.flush() == [(0, "stdout", "no newline yet")]
    assert d.flush() == []
