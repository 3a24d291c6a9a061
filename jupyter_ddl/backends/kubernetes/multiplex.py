"""Following every container of a job on one thread, however many pods it has.

A follow stream (``GET .../pods/P/log?follow=true``) sends lines for as long as the
container runs. One blocked thread per stream costs a thread stack and a wake-up per
network chunk for each pod; at a hundred pods that is most of the watcher's memory.
Here the kubernetes client opens each stream (so its authentication, TLS and proxy
settings apply unchanged), then the socket is taken over: one selector thread reads
every open stream without blocking and decodes the HTTP body itself (``chunked``).

Blocking calls (opening a stream, reading a previous container's log) go to a small
fixed pool of ``OPENERS`` threads. So a watcher runs 1 + ``OPENERS`` threads for its
logs whatever the number of pods. Whether a container still runs when its stream ends
is asked of the caller (the watcher answers from its pod watch): at a job's end every
stream ends at once, and a request each would hold the end up. Since the log API cannot
name a container ID, a stream about to be reopened is checked with the API, and so is a
first open of a pod that can restart (its container may have been replaced meanwhile).

Per container the behaviour is that of a plain follower: lines in order, with their
timestamps; a stream that ends while the container still runs is reopened (with
backoff) from the last timestamp delivered, and lines already delivered, by
(timestamp, text), are dropped, so nothing repeats even when the kubelet rotated
the log file in between (lines a rotation took meanwhile are named: ``rotation_gap``); a
container's follower waits for the previous follower of the same replica (an earlier
container of a restarted pod), so a replica's lines stay in order.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import selectors
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from jupyter_ddl.backends.kubernetes import logs
from jupyter_ddl.backends.kubernetes.api_errors import from_api_exception
from jupyter_ddl.backends.kubernetes.connection import Connection
from jupyter_ddl.backends.kubernetes.items import Batch, one_line
from jupyter_ddl.backends.kubernetes.logstream import (
    FIRST_DELAY,
    MAX_DELAY,
    Stream,
    read_some,
    take_over,
)
from jupyter_ddl.errors import DDLError

log = logging.getLogger(__name__)

OPENERS = 8  # threads for the blocking calls: short (headers, one GET), mostly waiting
OPEN_TIMEOUT = (10.0, 30.0)  # connect, headers: a hung open must not hold an opener


class LogMultiplexer:
    """Follows containers' logs; ``emit(rid, batch)`` gets each network read's lines
    (returns False to stop), ``on_done(stream)`` each finished follower, and
    ``still_running(pod, cid)`` (non-blocking) says whether a container whose stream
    ended still runs, so its stream is opened again."""

    def __init__(
        self,
        conn: Connection,
        emit: Callable[[str, Batch], bool],
        *,
        still_running: Callable[[str, str | None], bool],
        may_restart: Callable[[str], bool] = lambda pod: True,
        on_done: Callable[[Stream], object] = lambda s: None,
        on_error: Callable[[str, DDLError], object] = lambda rid, err: None,
        on_lost: Callable[[str], object] = lambda cause: None,
        openers: int = OPENERS,
    ) -> None:
        self.conn = conn
        self.emit, self.on_done, self.on_error, self.on_lost = emit, on_done, on_error, on_lost
        self.still_running = still_running
        self.may_restart = may_restart
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=openers, thread_name_prefix="ddl-k8s-logs")
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._inbox: queue.SimpleQueue[tuple[str, Stream, Any]] = queue.SimpleQueue()
        self._timers: list[tuple[float, int, Stream]] = []
        self._order = itertools.count()
        self._open: set[Stream] = set()
        self._thread = threading.Thread(target=self._loop, name="ddl-k8s-logmux", daemon=True)
        self._thread.start()

    # -- the API ------------------------------------------------------------------------
    def follow(
        self, pod: str, container: str | None, cid: str, rid: str, after: Stream | None = None
    ) -> Stream:
        """Follow one running (or finished) container from its first line."""
        s = Stream(pod, container, cid, rid)
        self._after(s, after, self._open_stream)
        return s

    def previous(
        self, pod: str, container: str | None, rid: str, after: Stream | None = None
    ) -> Stream:
        """Read the log of the pod's previous container once (it restarted before we
        saw it run): its last lines say why it ended."""
        s = Stream(pod, container, None, rid)
        self._after(s, after, self._read_previous)
        return s

    def close(self) -> None:
        """Stop following: every stream is closed and every thread ends."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._wake()
        if threading.current_thread() is not self._thread:
            self._thread.join(5)
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- ordering and completion ------------------------------------------------------------
    def _after(self, s: Stream, after: Stream | None, start: Callable[[Stream], None]) -> None:
        with self._lock:
            if after is not None and after.is_alive():
                s.start = start
                after.then.append(s)
                return
        self._submit(start, s)

    def _finish(self, s: Stream) -> None:
        with self._lock:
            s.done.set()
            waiting, s.then = s.then, []
        self.on_done(s)  # after its last lines: the consumer reads them first
        for w in waiting:
            start, w.start = w.start, None
            if start is not None:
                self._submit(start, w)

    def _submit(self, fn: Callable[[Stream], None], s: Stream) -> None:
        if self._closed.is_set():
            return
        try:
            self._pool.submit(self._guard, fn, s)
        except RuntimeError:  # the pool shut down meanwhile: we are closing
            pass

    def _guard(self, fn: Callable[..., None], s: Stream) -> None:
        try:
            fn(s)
        except Exception as e:
            log.exception("following the log of pod %s failed; retrying", s.pod)
            self.on_lost(f"following the log of pod {s.pod}: {one_line(e)}")
            if s.is_alive():  # again after the stream's back-off, as a broken stream
                s.broken = True
                self._ended(s)

    # -- blocking steps (pool threads) ---------------------------------------------------
    def _open_stream(self, s: Stream) -> None:
        from kubernetes.client import ApiException

        kwargs: dict[str, Any] = {"follow": True, "timestamps": True, "_preload_content": False,
                                  "_request_timeout": OPEN_TIMEOUT}  # fmt: skip
        if s.container:
            kwargs["container"] = s.container
        if s.opens:
            # The log API names no container ID: reopened after a restart the pod
            # watch has not shown yet, the stream would be the next container's.
            which = logs.which_log(self.conn, s.pod, s.container, s.cid, OPEN_TIMEOUT)
            if which in (None, "gone"):
                return self._finish(s)
            if which == "previous":  # it restarted: the rest is in the previous log
                return self._rest_of_previous(s)
            since = s.since_seconds(time.time())
            if since is not None:
                kwargs["since_seconds"] = since
            gap = logs.rotation_gap(self.conn, s.pod, s.container, s.last_stamp)
            if gap:  # in the replica's lines, where they are missing
                self.emit(s.rid, [(None, gap)])
        s.opens += 1
        s.broken = False
        try:
            resp = self.conn.client("CoreV1Api").read_namespaced_pod_log(
                s.pod, self.conn.namespace, **kwargs
            )
        except ApiException as e:
            if e.status == 404 and s.opens == 1 and not s.delivered:
                # Deleted before its log was ever read (an operator deletes a job's
                # running pods at its end, the kubelet the log with them): say so in
                # the replica's lines rather than show a replica that printed nothing.
                self.emit(s.rid, [(None, logs.unread_note(s.pod))])
                return self._finish(s)
            if e.status == 404 or (
                e.status == 400 and any(m in str(e.body) for m in logs.NOT_STARTED + ("not found",))
            ):
                s.broken = True
                return self._ended(s)  # not started yet, or gone: ask again
            self.on_error(s.rid, from_api_exception(e, action=f"reading the log of pod {s.pod}",
                          verb="get", resource="pods/log", namespace=self.conn.namespace))  # fmt: skip
            return self._finish(s)
        except OSError:
            s.broken = True
            return self._ended(s)
        except Exception as e:
            if type(e).__module__.startswith("urllib3"):
                s.broken = True
                return self._ended(s)
            raise
        if s.opens == 1 and self.may_restart(s.pod):
            # The first open is checked once its headers are in (the container was
            # chosen by then): a container restarted at once (the kubelet's first
            # restart has no back-off) may have been replaced between the pod watch
            # naming it and the open, and the stream would be the next container's.
            # A pod deleted since the open ("gone": a job's end deletes its pods) keeps
            # the stream it had: that was this container's.
            which = logs.which_log(self.conn, s.pod, s.container, s.cid, OPEN_TIMEOUT)
            if which in (None, "previous"):
                resp.close()
                return self._finish(s) if which is None else self._rest_of_previous(s)
        taken = take_over(resp)
        if taken is None:  # a client whose internals we do not know: a thread of its own
            threading.Thread(target=self._pump_blocking, args=(s, resp), daemon=True).start()
            return
        s.resp, (s.sock, head, s.body) = resp, taken
        self._inbox.put(("add", s, head))
        self._wake()
        if self._closed.is_set() and not self._thread.is_alive():
            self._close_inbox()  # closed while we opened it: nobody else will

    def _ended(self, s: Stream) -> None:
        """A stream ended (or could not open): the selector thread decides what next."""
        self._inbox.put(("ended", s, None))
        self._wake()

    def _check(self, s: Stream) -> None:
        """Selector thread: open the stream again later if the container still runs,
        or if the connection broke (lines may be left even if it has ended since)."""
        if self._closed.is_set() or not (s.broken or self.still_running(s.pod, s.cid)):
            return self._finish(s)
        heapq.heappush(self._timers, (time.monotonic() + s.delay, next(self._order), s))
        s.delay = min(s.delay * 2, MAX_DELAY)

    def _rest_of_previous(self, s: Stream) -> None:
        lines = [x for x in logs.read_container(self.conn, s.pod, s.container, previous=True,
                                           stop=self._closed) if x]  # fmt: skip
        rest = [x for x in lines if s.take(*x)]
        if rest and not self._closed.is_set():
            self.emit(s.rid, rest)
        self._finish(s)

    def _read_previous(self, s: Stream) -> None:
        lines = [x for x in logs.read_container(self.conn, s.pod, s.container, previous=True,
                                           stop=self._closed) if x]  # fmt: skip
        if lines and not self._closed.is_set():
            self.emit(s.rid, lines)
        self._finish(s)

    def _pump_blocking(self, s: Stream, resp: Any) -> None:
        batch: Batch = []
        try:
            for line in logs.iter_lines(resp, self._closed, marks=True):
                if line is None:
                    if batch and not self.emit(s.rid, batch):
                        return
                    batch = []
                    continue
                s.seen += 1
                stamp, text = logs.split_timestamp(line)
                if s.take(stamp, text):
                    batch.append((stamp, text))
            if batch:
                self.emit(s.rid, batch)
        except Exception:  # noqa: BLE001 - a broken stream: read the rest again
            s.broken = True
        finally:
            resp.release_conn()
        s._reset()
        self._ended(s)

    # -- the selector thread ---------------------------------------------------------------
    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    def _loop(self) -> None:
        delay = FIRST_DELAY
        try:
            while not self._closed.is_set():
                try:
                    self._turn()
                    delay = FIRST_DELAY
                except Exception as e:
                    log.exception("the log multiplexer failed; going on in %.1f s", delay)
                    self.on_lost(f"following the logs: {one_line(e)}")
                    self._closed.wait(delay)
                    delay = min(delay * 2, MAX_DELAY)
        finally:
            self._close_inbox()  # streams opened meanwhile
            for s in list(self._open):
                self._disconnect(s)
            self._sel.close()
            self._wake_r.close()
            self._wake_w.close()

    def _turn(self) -> None:
        """One wake-up: read what arrived, take commands, reopen what is due."""
        timeout = max(0.0, self._timers[0][0] - time.monotonic()) if self._timers else 1.0
        for key, _ in self._sel.select(timeout):
            if key.data is None:
                self._drain_wake()
            elif not self._closed.is_set():
                self._read(key.data)
        self._inbox_commands()
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            s = heapq.heappop(self._timers)[2]
            if s.broken or self.still_running(s.pod, s.cid):  # or ended meanwhile
                self._submit(self._open_stream, s)
            else:
                self._finish(s)

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:  # would block (drained) or closed
            pass

    def _close_inbox(self) -> None:
        while True:
            try:
                what, s, _ = self._inbox.get_nowait()
            except queue.Empty:
                return
            if what == "add" and s.resp is not None:
                try:
                    s.resp.close()
                except Exception:  # noqa: BLE001 - closing must not fail the caller
                    pass

    def _inbox_commands(self) -> None:
        while True:
            try:
                what, s, arg = self._inbox.get_nowait()
            except queue.Empty:
                return
            if what == "add":
                assert s.sock is not None
                self._open.add(s)
                self._sel.register(s.sock, selectors.EVENT_READ, s)
                if self._closed.is_set():
                    continue  # the finally clause closes it
                if arg:  # what http.client had read past the headers
                    self._payload(s, arg, eof=False)
                self._read(s)  # TLS may hold decrypted bytes that select cannot see
            elif what == "ended":
                self._check(s)

    def _read(self, s: Stream) -> None:
        if s.sock is None:
            return
        raw, eof = read_some(s.sock)
        if raw or eof:
            self._payload(s, raw, eof=eof)

    def _payload(self, s: Stream, raw: bytes, *, eof: bool) -> None:
        """Hand on the whole lines that arrived; end the connection if it is done."""
        if s.body is None:
            return
        batch, clean, ended = s.feed(raw, eof)
        if batch and not self.emit(s.rid, batch):
            self._closed.set()
            return
        if ended:
            self._disconnect(s)
            s.broken = not clean
            self._check(s)

    def _disconnect(self, s: Stream) -> None:
        if s.sock is not None:
            try:
                self._sel.unregister(s.sock)
            except (KeyError, ValueError):
                pass
        if s.resp is not None:
            try:
                s.resp.close()  # never back to the pool: we read its socket ourselves
            except Exception:  # noqa: BLE001 - closing must not fail the loop
                pass
        self._open.discard(s)
        s._reset()
