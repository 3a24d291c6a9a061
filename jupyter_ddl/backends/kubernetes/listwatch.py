"""List, then watch, one kind of object, as a producer thread of a job's watcher.

Reads the API's raw JSON lines (``_preload_content=False``): objects stay dicts, and
the client's own watch helper (which buffers whole reads with some urllib3 versions,
so events arrive late) is not involved. A 410 Gone re-lists, and the re-list is the
whole truth: it ends with ``Synced(names listed)`` so the consumer forgets what was
deleted while nobody watched (client-go's Reflector replaces its store the same way).
403 and 404 end the producer with a ``Refused`` item. Other failures reconnect after a
bounded exponential back-off; the consumer hears ``LostContact`` (the dashboard shows
it) once per outage: at once for an unexpected exception (logged with its
traceback: a bug must not stall the stream unseen), after a second failure in a row
for network trouble (a cut watch is routine and reconnects at once).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from jupyter_ddl.backends.kubernetes.items import (
    Changed,
    Item,
    LostContact,
    Refused,
    Synced,
    one_line,
)
from jupyter_ddl.backends.kubernetes.logs import iter_lines
from jupyter_ddl.errors import WatchError

log = logging.getLogger(__name__)
Put = Callable[[Item], bool]
FIRST_DELAY, MAX_DELAY = 0.2, 10.0
#: seconds a watch that was allowed is retried through 403s before it counts as refused
REFUSED_RETRY = 30.0


class ListWatch:
    """Producers for one watcher: ``put`` hands an item on (False: stop), ``halt`` and
    ``stop`` end them, ``cut`` unblocks their open watches at once."""

    def __init__(self, put: Put, halt: threading.Event, stop: threading.Event) -> None:
        self._put, self._halt, self.stop = put, halt, stop
        self._watches: set[Any] = set()  # open watch responses, cut when we stop
        self._wlock = threading.Lock()

    def run(self, of: type[Changed], list_fn: Callable[..., Any], **kw: Any) -> None:
        """List, then watch from the list's resourceVersion, until halted."""
        from kubernetes.client import ApiException

        delay, rv, failures = FIRST_DELAY, None, 0
        allowed, refused_since = False, None  # a list went through; when 403s began
        error: Exception
        while not (self.stop.is_set() or self._halt.is_set()):
            try:
                if rv is None:
                    rv = self._list(of, list_fn, **kw)
                    allowed, refused_since = True, None
                rv = self._watch_from(of, list_fn, rv, **kw)
                delay, failures, refused_since = FIRST_DELAY, 0, None
                continue
            except ApiException as e:
                if e.status == 410:
                    rv = None  # history compacted: re-list from scratch
                    continue
                # a restarted API server answers 403 until its RBAC caches are filled:
                # what was allowed a moment ago is retried for a while before it counts
                now = time.monotonic()
                refused_since = refused_since or now
                if e.status == 403 and allowed and now - refused_since < REFUSED_RETRY:
                    expected, cause, error = True, f"{e.status} {e.reason}", e
                elif e.status in (403, 404):
                    self._put(Refused(of, e))
                    return
                else:
                    expected, cause, error = True, f"{e.status} {e.reason}", e
                    refused_since = None
            except Exception as e:  # noqa: BLE001 - reported and retried, never silent
                expected, cause, error = _is_network(e) or isinstance(e, WatchError), one_line(e), e
            if self.stop.is_set() or self._halt.is_set():
                return  # our own cut ended it
            failures += 1
            if failures == 1 and not expected:
                log.error("watching %s failed; retrying in %.1f s", of.about, delay, exc_info=error)
            else:
                log.info("watching %s failed (%s); retrying in %.1f s", of.about, cause, delay)
            if failures == (2 if expected else 1):
                self._put(LostContact(f"watching {of.about}: {cause}"))
            self._halt.wait(delay)
            delay = min(delay * 2, MAX_DELAY)

    def _list(self, of: type[Changed], list_fn: Callable[..., Any], **kw: Any) -> str:
        resp = list_fn(_preload_content=False, **kw)
        try:
            listing = json.loads(resp.data)
        finally:
            resp.release_conn()
        rv = str(listing["metadata"]["resourceVersion"])  # first: a broken list says nothing
        items = listing.get("items") or []
        for item in items:
            self._put(of("ADDED", item))
        self._put(Synced(of, frozenset(str((i.get("metadata") or {}).get("name")) for i in items)))
        return rv

    def _watch_from(
        self, of: type[Changed], list_fn: Callable[..., Any], rv: str, **kw: Any
    ) -> str | None:
        """One watch request; returns the resourceVersion to go on from (None: re-list)."""
        resp = list_fn(watch=True, resource_version=rv, timeout_seconds=30,
                       _preload_content=False, **kw)  # fmt: skip
        with self._wlock:
            self._watches.add(resp)
        try:
            for line in iter_lines(resp, self._halt):
                if not line:
                    continue
                ev = json.loads(line)
                obj = ev.get("object") or {}
                if ev.get("type") == "ERROR":
                    if obj.get("code") == 410:
                        return None
                    raise WatchError(f"watch error: {obj.get('message')}")
                rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                if ev.get("type") != "BOOKMARK" and not self._put(of(ev["type"], obj)):
                    break
        finally:
            with self._wlock:
                self._watches.discard(resp)
            resp.release_conn()
        return rv

    def cut(self) -> None:
        """Unblock the watch threads now (they would otherwise wait for the server's
        timeout): shut their sockets down."""
        import socket

        with self._wlock:
            open_now = list(self._watches)
        for resp in open_now:
            sock = getattr(getattr(resp, "connection", None), "sock", None)
            try:
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _is_network(e: BaseException) -> bool:
    """Trouble of the connection (the reconnect is the remedy), not of our code."""
    return isinstance(e, OSError) or type(e).__module__.startswith(("urllib3", "http.client"))
