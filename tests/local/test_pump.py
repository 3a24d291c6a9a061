"""The supervisor's output pump with real processes: every line of every pipe in
order (bursts, a last line without newline, stderr), exits heard, and one thread for
any number of processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

from jupyter_ddl.backends.local.pump import OutputPump

WRITER = """\
import sys, time
n = int(sys.argv[1])
for i in range(n):
    sys.stdout.write("".join(f"out {i} {j}\\n" for j in range(5)))  # a burst of 5
    sys.stdout.flush()
    if i % 7 == 0:
        print(f"err {i}", file=sys.stderr, flush=True)
    time.sleep(0.002)
sys.stdout.write("no newline at the end")
"""


def start(n: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def test_many_processes_every_line_in_order_on_one_thread():
    wakes = threading.Semaphore(0)
    pump = OutputPump(wakes.release)
    got: dict[int, dict[str, list[str]]] = {}
    closed_streams: list[tuple[int, str]] = []
    lock = threading.Lock()
    procs, done = [], []
    try:
        for k in range(12):
            p = start(40)

            def sink(stream, texts, closed, k=k):
                with lock:
                    got.setdefault(k, {}).setdefault(stream, []).extend(texts)
                    if closed:
                        closed_streams.append((k, stream))

            done.append(pump.add(p.pid, {"stdout": p.stdout, "stderr": p.stderr}, sink))
            procs.append(p)
        assert sum(t.name == "ddl-pump" for t in threading.enumerate()) == 1
        for p, d in zip(procs, done, strict=True):
            assert p.wait(30) == 0
            assert d.wait(10), "the pipes of an ended process were not closed"
    finally:
        pump.close()
    expect_out = [f"out {i} {j}" for i in range(40) for j in range(5)] + ["no newline at the end"]
    expect_err = [f"err {i}" for i in range(0, 40, 7)]
    for k in range(12):
        assert got[k]["stdout"] == expect_out, k
        assert got[k]["stderr"] == expect_err, k
    assert sorted(closed_streams) == sorted((k, s) for k in range(12) for s in ("stdout", "stderr"))
    # each process's exit (pidfd) and each closing of its pipes wakes the supervisor
    assert sum(wakes.acquire(timeout=0) for _ in range(24)) >= 12
    assert not any(t.name == "ddl-pump" for t in threading.enumerate())


def test_an_exit_is_heard_while_a_child_still_holds_the_pipes():
    heard = threading.Event()
    pump = OutputPump(heard.set)
    # the shell exits at once; its background sleep (same process group) keeps the pipe
    p = subprocess.Popen(["sh", "-c", "echo started; sleep 30 &"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    lines: list[str] = []
    try:
        closed = pump.add(p.pid, {"stdout": p.stdout}, lambda s, texts, c: lines.extend(texts))
        assert p.wait(10) == 0
        deadline = time.monotonic() + 10
        while lines != ["started"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert lines == ["started"]
        if pump.exits_heard:  # pidfds (Linux 5.3+): the exit alone wakes the supervisor
            assert heard.wait(5), "the exit was not heard"
        assert not closed.is_set()  # the pipe is still open: the child holds it
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        pump.close()
