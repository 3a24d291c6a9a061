"""List, then watch, one kind of object, as a producer thread of a job's watcher.

Reads the API's raw JSON lines (``_preload_content=False``): objects stay dicts, and
the client's own watch helper (which buffers whole reads with some urllib3 versions,
so events arrive late) is not involved. A 410 Gone re-lists, and the re-list is the
whole truth: it ends with ``(<tag>-synced, names listed)`` so the consumer forgets
what was deleted while nobody watched (client-go's Reflector replaces its store the
same way). Other failures reconnect with backoff; 403 and 404 end the producer with an
``("error", (tag, exception))`` item.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from .logs import iter_lines

Put = Callable[[tuple[str, Any]], bool]


class ListWatch:
    """Producers for one watcher: ``put`` hands an item on (False: stop), ``halt`` and
    ``stop`` end them, ``cut`` unblocks their open watches at once."""

    def __init__(self, put: Put, halt: threading.Event, stop: threading.Event) -> None:
        self._put, self._halt, self.stop = put, halt, stop
        self._watches: set[Any] = set()  # open watch responses, cut when we stop
        self._wlock = threading.Lock()

    def run(self, tag: str, list_fn: Callable[..., Any], **kw: Any) -> None:
        """List, then watch from the list's resourceVersion, until halted."""
        from kubernetes.client import ApiException

        delay, rv = 0.2, None
        while not (self.stop.is_set() or self._halt.is_set()):
            try:
                if rv is None:
                    rv = self._list(tag, list_fn, **kw)
                rv = self._watch_from(tag, list_fn, rv, **kw)
                delay = 0.2
            except ApiException as e:
                if e.status == 410:
                    rv = None  # history compacted: re-list from scratch
                    continue
                if e.status in (403, 404):
                    self._put(("error", (tag, e)))
                    return
                self._halt.wait(delay)
                delay = min(delay * 2, 10.0)
            except Exception:  # noqa: BLE001 - network trouble of any kind: reconnect
                self._halt.wait(delay)
                delay = min(delay * 2, 10.0)

    def _list(self, tag: str, list_fn: Callable[..., Any], **kw: Any) -> str:
        resp = list_fn(_preload_content=False, **kw)
        try:
            listing = json.loads(resp.data)
        finally:
            resp.release_conn()
        items = listing.get("items") or []
        for item in items:
            self._put((tag, ("ADDED", item)))
        self._put((tag + "-synced", {(i.get("metadata") or {}).get("name") for i in items}))
        return str(listing["metadata"]["resourceVersion"])

    def _watch_from(self, tag: str, list_fn: Callable[..., Any], rv: str, **kw: Any) -> str | None:
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
                    raise RuntimeError(f"watch error: {obj.get('message')}")
                rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                if ev.get("type") != "BOOKMARK" and not self._put((tag, (ev["type"], obj))):
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
