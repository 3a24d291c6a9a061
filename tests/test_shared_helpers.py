"""The small shared helpers: one time parser, whole-file writes, a bounded hand-over
that stops, one spelling of replica ids, a Ctrl-C held over a few lines."""

from __future__ import annotations

import os
import queue
import signal
import stat
import threading
from datetime import datetime, timezone

import pytest

from jupyter_ddl._util import timestamps
from jupyter_ddl._util.atomic import write_atomic
from jupyter_ddl._util.interrupts import held_interrupt
from jupyter_ddl._util.queues import put_until_stopped
from jupyter_ddl.backends.kubernetes.logs import split_timestamp
from jupyter_ddl.backends.kubernetes.status import epoch
from jupyter_ddl.backends.local.jobdir import format_log_line, parse_log_line
from jupyter_ddl.models import ReplicaStatus, replica_id


def test_one_parser_for_api_times_kubelet_lines_and_local_logs():
    whole = datetime(2026, 11, 21, 23, 40, 1, tzinfo=timezone.utc).timestamp()
    assert epoch("2026-11-21T23:40:01Z") == whole  # the API's whole seconds
    assert epoch("2026-11-21T23:40:01+00:00") == whole
    assert epoch("2026-11-21T23:40:01.25Z") == whole + 0.25
    assert epoch("") is None and epoch(None) is None and epoch("yesterday") is None
    t, text = split_timestamp("2026-11-21T23:40:01.123456789Z hello")  # the kubelet's ns
    assert text == "hello" and t == (int(whole) * 10**9 + 123456789) / 10**9
    stamped = format_log_line(whole + 0.5, "stderr", "x")
    assert stamped == "2026-11-21T23:40:01.500000Z stderr x\n"
    assert parse_log_line(stamped) == (whole + 0.5, "stderr", "x")
    for bad in ("2026-11-21T23:40:01.Z", "2026-11-21T23:40:01.5+02:00", "2026-11-21 23:40:01Z"):
        assert timestamps.parse(bad) is None, bad


def test_atomic_write_replaces_whole_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "config.json"
    target.write_text("old")
    write_atomic(target, b"new")
    assert target.read_bytes() == b"new" and os.listdir(tmp_path) == ["config.json"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    write_atomic(target, b"readable", mode=0o644)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644

    with pytest.raises(TypeError):  # fails while writing: the old file stays, no temporary
        write_atomic(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"readable" and os.listdir(tmp_path) == ["config.json"]


def test_concurrent_atomic_writers_never_share_a_temporary(tmp_path):
    target = tmp_path / "prefs.json"
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for _ in range(50):
                write_atomic(target, str(n).encode() * 100)
        except BaseException as e:  # noqa: BLE001 - collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(target.read_text())) == 1  # one writer's file, whole


def test_bounded_hand_over_waits_while_full_and_gives_up_when_stopped():
    q: queue.Queue[int] = queue.Queue(maxsize=1)
    stop, halt = threading.Event(), threading.Event()
    assert put_until_stopped(q, 1, stop, halt)
    threading.Timer(0.3, q.get).start()  # the consumer takes one: room again
    assert put_until_stopped(q, 2, stop, halt, poll=0.05) and q.get() == 2
    q.put(3)
    threading.Timer(0.2, halt.set).start()
    assert not put_until_stopped(q, 4, stop, halt, poll=0.05)  # full, then stopped


def test_replica_ids_have_one_spelling():
    assert replica_id("Worker", 3) == "worker-3" == ReplicaStatus("Worker", 3).id


@pytest.fixture
def ctrl_c():
    """Ctrl-C as a kernel has it (Python's own handler), whatever this process inherited:
    a shell starts a background job, and xdist a worker, with SIGINT ignored."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_ctrl_c_inside_a_held_block_lands_after_it_whole(ctrl_c):
    done = []
    with pytest.raises(KeyboardInterrupt), held_interrupt():
        signal.raise_signal(signal.SIGINT)  # what a kernel interrupt is
        done.append("after the signal")  # still runs: the block is not cut
    assert done == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_held_block_without_ctrl_c_or_off_the_main_thread_changes_nothing(ctrl_c):
    with held_interrupt():
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    seen = []

    def elsewhere():
        with held_interrupt():  # no handler can be set here: the block just runs
            seen.append(signal.getsignal(signal.SIGINT))

    t = threading.Thread(target=elsewhere)
    t.start()
    t.join()
    assert seen == [signal.default_int_handler]
