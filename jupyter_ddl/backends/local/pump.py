"""One thread that reads every replica's stdout and stderr, and hears their exits.

Replicas write into pipes; the supervisor stamps each line and appends it to the
replica's log file. With a blocked thread per pipe, each line woke a thread and cost a
write and a flush of its own. Here one selector thread reads whatever is in a pipe at
once (``os.read``), and hands a replica's whole lines to ``sink(lines)`` together, so a
burst of lines costs one wake-up and one file write. The same selector watches a
pidfd per process (Linux 5.3+), so the supervisor's loop sleeps until something
happens instead of polling the processes ten times a second.
"""

from __future__ import annotations

import os
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO

READ_SIZE = 65536
#: while lines keep coming (a read within this long of the one before), wait this long
#: before reading again: the lines of every replica that arrive meanwhile then cost
#: one wake-up and one write each, not one per line (a chatty job's main cost here).
#: A line after a quiet spell is read at once, so "rank ready" lines are not delayed.
COALESCE = 0.05
#: the longest line kept whole; longer ones are cut, as a pipe read would cut them
MAX_LINE = 1 << 20

#: ``sink(stream, texts, closed)``: a pipe's whole lines (and whether it has closed)
Sink = Callable[[str, list[str], bool], None]


@dataclass
class _Pipe:
    stream: str
    pipe: IO[bytes]
    sink: Sink
    done: Callable[[], None]
    partial: bytes = b""


@dataclass
class _Exit:
    on_exit: Callable[[], None]
    fd: int


@dataclass
class _Watched:
    pipes: list[_Pipe] = field(default_factory=list)
    closed: threading.Event = field(default_factory=threading.Event)


def background_thread() -> bool:
    """Make the calling thread's wake-ups wait for a free core (``SCHED_BATCH``);
    whether that was done. The pump wakes a few dozen times a second while a job
    prints, and a waking normal thread may preempt a running one: here that would be a
    rank in the middle of a collective, and its peers would wait for it. A batch
    thread still gets its fair share of the CPU (its pipes never fill); it only runs
    when a core is idle or at the next tick, which the ranks' own waits give it often.
    Only this thread: the replicas are forked from the main thread, which stays
    normal, so they never inherit the policy."""
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))  # 0: this thread
        return True
    except (AttributeError, OSError):  # not Linux, or refused: normal as before
        return False


class OutputPump:
    """``add(proc, sink)`` reads the process's pipes until they close; ``wake`` is
    called when a watched process exits (or its pipes close)."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self.wake = wake
        self._sel = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._pending: list[tuple[int, object]] = []  # (fd, what): registered by the thread
        self._stopping = False
        self.exits_heard = hasattr(os, "pidfd_open")  # else the caller must poll
        self._thread = threading.Thread(target=self._loop, name="ddl-pump", daemon=True)
        self._thread.start()

    def add(self, pid: int, pipes: dict[str, IO[bytes]], sink: Sink) -> threading.Event:
        """Read ``pipes`` ({"stdout": ..., "stderr": ...}) into ``sink``; the returned
        event is set once every pipe has closed (the last lines were handed on)."""
        watched = _Watched()
        left = [len(pipes)]

        def one_closed() -> None:
            left[0] -= 1
            if left[0] == 0:
                watched.closed.set()
                self.wake()

        for stream, pipe in pipes.items():
            os.set_blocking(pipe.fileno(), False)
            watched.pipes.append(_Pipe(stream, pipe, sink, one_closed))
        items: list[tuple[int, object]] = [(p.pipe.fileno(), p) for p in watched.pipes]
        exit_fd = _pidfd(pid) if self.exits_heard else None
        if exit_fd is not None:
            items.append((exit_fd, _Exit(self.wake, exit_fd)))
        if not pipes:
            watched.closed.set()
        with self._lock:
            self._pending += items
        self._poke()
        return watched.closed

    def close(self) -> None:
        with self._lock:
            self._stopping = True
        self._poke()
        if threading.current_thread() is not self._thread:
            self._thread.join(5)

    def _poke(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    # -- the thread -------------------------------------------------------------------
    def _loop(self) -> None:
        last_read = 0.0
        background_thread()
        try:
            while True:
                with self._lock:
                    pending, self._pending = self._pending, []
                    stopping = self._stopping
                for fd, what in pending:
                    self._sel.register(fd, selectors.EVENT_READ, what)
                if stopping:
                    return
                got = False
                for key, _ in self._sel.select():
                    what = key.data
                    if what is None:
                        try:
                            while self._wake_r.recv(4096):
                                pass
                        except OSError:
                            pass
                    elif isinstance(what, _Exit):
                        self._sel.unregister(key.fd)
                        os.close(what.fd)
                        what.on_exit()
                    else:
                        self._read(what)  # type: ignore[arg-type]
                        got = True
                if got:
                    now = time.monotonic()
                    if now - last_read < COALESCE:
                        time.sleep(COALESCE)
                    last_read = now
        finally:
            for key in list(self._sel.get_map().values()):
                if isinstance(key.data, _Exit):
                    os.close(key.data.fd)
            self._sel.close()
            self._wake_r.close()
            self._wake_w.close()

    def _read(self, p: _Pipe) -> None:
        try:
            data = os.read(p.pipe.fileno(), READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            *lines, p.partial = (p.partial + data).split(b"\n")
            if len(p.partial) > MAX_LINE:
                lines.append(p.partial)
                p.partial = b""
        else:  # closed: the last line may lack its newline
            lines = [p.partial] if p.partial else []
            p.partial = b""
        if lines or not data:
            p.sink(p.stream, [raw.decode("utf-8", "replace") for raw in lines], not data)
        if not data:
            self._sel.unregister(p.pipe.fileno())
            p.pipe.close()
            p.done()


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except OSError:  # gone already, or a kernel without pidfds: the caller polls
        return None
