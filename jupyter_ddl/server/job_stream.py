"""Server-sent events of the job list: new, changed and ended jobs pushed to the sidebar.

``GET /jupyter-ddl/events`` answers a ``jobs`` event (the whole list, the rows of
``GET /jobs``), then a ``job`` event for every row that appears or changes and a
``removed`` event for every job that goes away, and an ``unavailable`` event whenever
the backends that could not be asked change. One ``JobListWatch`` per server asks
the one job API (``JobManager.list``) every ``WATCH_S`` seconds (less often when a look
is slow) while at least one client listens, and fans the differences out to every
client: a hundred open sidebars cost one list call per tick, and none when nobody
listens.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web
from tornado.iostream import StreamClosedError

from jupyter_ddl.errors import DDLError
from jupyter_ddl.manager import JobManager
from jupyter_ddl.server import answers as views
from jupyter_ddl.server.handlers import DDLHandler
from jupyter_ddl.server.sse import HEARTBEAT_S, format_event

log = logging.getLogger(__name__)

#: seconds between two looks at the job list (a change reaches the browser within it)
WATCH_S = 0.4
#: a look may take at most this share of the time: a slow list (a cluster far away)
#: is looked at less often instead of keeping a thread and the API server busy
BUSY_SHARE = 0.25
SLOW_LOOKS = 3
#: frames a slow client may have waiting before it is sent a fresh snapshot instead
BACKLOG = 200
#: key under which the server's one watch lives in the tornado settings
SETTINGS_KEY = "ddl_job_list_watch"

Key = tuple[str, str]  # (backend, name): names are unique per backend only


def row_key(row: Mapping[str, Any]) -> Key:
    return (str(row["backend"]), str(row["name"]))


def _comparable(row: Mapping[str, Any]) -> dict[str, Any]:
    # elapsed grows on every look: the browser counts it on from the row it got
    return {k: v for k, v in row.items() if k != "elapsed"}


def diff_rows(
    old: Mapping[Key, Mapping[str, Any]], new: Mapping[Key, Mapping[str, Any]]
) -> list[str]:
    """SSE frames turning the list ``old`` into ``new``: ``job`` for each row that
    appeared or changed (besides its elapsed time), ``removed`` for each that left."""
    frames = []
    for key, row in new.items():
        before = old.get(key)
        if before is None or _comparable(before) != _comparable(row):
            frames.append(format_event("job", row))
    for backend, name in old.keys() - new.keys():
        frames.append(format_event("removed", {"backend": backend, "name": name}))
    return frames


def pause_after(took: Sequence[float], interval: float = WATCH_S) -> float:
    """Seconds to wait after looks that took ``took`` seconds (the latest last).

    Only a list that was slow on each of the last ``SLOW_LOOKS`` looks spaces them
    out: the first look loads the backends, and one slow look may be a busy moment."""
    if len(took) < SLOW_LOOKS:
        return interval
    fastest = min(list(took)[-SLOW_LOOKS:])
    return max(interval, fastest / BUSY_SHARE - fastest)


def snapshot_frame(
    rows: Mapping[Key, Mapping[str, Any]], unavailable: Sequence[Mapping[str, Any]] = ()
) -> str:
    """The whole list, newest first, shaped like ``GET /jobs`` (with ``unavailable``)."""
    ordered = sorted(rows.values(), key=lambda r: r.get("created") or 0, reverse=True)
    return format_event("jobs", {"jobs": ordered, "unavailable": list(unavailable)})


class JobListWatch:
    """Looks at the job list while someone listens; each listener gets a queue of frames."""

    def __init__(self, manager: Callable[[], JobManager], interval: float = WATCH_S) -> None:
        self._manager = manager  # looked up on every tick: tests swap the app's manager
        self.interval = interval
        self._rows: dict[Key, dict[str, Any]] | None = None  # None: not known (yet)
        self._unavailable: list[dict[str, Any]] = []  # backends the last look could not ask
        self._queues: set[asyncio.Queue[str]] = set()
        self._task: asyncio.Task[None] | None = None
        self._took: deque[float] = deque(maxlen=SLOW_LOOKS)  # seconds the last looks took

    @property
    def listeners(self) -> int:
        return len(self._queues)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def subscribe(self) -> asyncio.Queue[str]:
        """A new listener's queue; its first frame is the whole list."""
        queue: asyncio.Queue[str] = asyncio.Queue()
        if self._rows is not None:
            queue.put_nowait(snapshot_frame(self._rows, self._unavailable))
        self._queues.add(queue)
        if not self.running:
            self._rows = None  # nobody watched for a while: start from a fresh list
            self._task = asyncio.get_running_loop().create_task(self._run())
            self._task.add_done_callback(_log_failure)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[str]) -> None:
        self._queues.discard(queue)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._queues:
            started = time.monotonic()
            try:
                listing = await loop.run_in_executor(None, lambda: self._manager().listing())
            except DDLError as e:
                self._fail(str(e))
            except Exception as e:  # the HTTP boundary: say it, keep watching
                log.exception("the job list watch failed")
                self._fail(f"listing jobs failed: {e}")
            else:
                self._update(
                    {row_key(r): r for r in map(views.job_summary, listing.jobs)},
                    [u.to_dict() for u in listing.unavailable],
                )
            self._took.append(time.monotonic() - started)
            await asyncio.sleep(pause_after(self._took, self.interval))

    def _update(self, rows: dict[Key, dict[str, Any]], unavailable: list[dict[str, Any]]) -> None:
        if self._rows is None:
            self._broadcast([snapshot_frame(rows, unavailable)])
        else:
            frames = diff_rows(self._rows, rows)
            if unavailable != self._unavailable:
                frames.append(format_event("unavailable", {"unavailable": unavailable}))
            self._broadcast(frames, resync=rows, resync_unavailable=unavailable)
        self._rows, self._unavailable = rows, unavailable

    def _fail(self, message: str) -> None:
        # keep no stale list: the next good look sends every listener a fresh snapshot
        self._rows = None
        self._broadcast([format_event("error", {"message": message})])

    def _broadcast(
        self,
        frames: list[str],
        resync: Mapping[Key, Any] | None = None,
        resync_unavailable: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        for queue in list(self._queues):
            if resync is not None and queue.qsize() + len(frames) > BACKLOG:
                _drain(queue)  # a client this far behind gets the list itself instead
                queue.put_nowait(snapshot_frame(resync, resync_unavailable))
                continue
            for frame in frames:
                queue.put_nowait(frame)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the job list watch stopped", exc_info=task.exception())


def _drain(queue: asyncio.Queue[str]) -> None:
    while not queue.empty():
        queue.get_nowait()


def job_list_watch(settings: dict[str, Any]) -> JobListWatch:
    """The server's one watch, made on first use."""
    watch = settings.get(SETTINGS_KEY)
    if watch is None:
        watch = settings[SETTINGS_KEY] = JobListWatch(lambda: settings["ddl_manager"])
    return watch


class JobEventsHandler(DDLHandler):
    """``GET /jupyter-ddl/events``: the job list as server-sent events (docs/rest-api.md)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.set_header("Content-Type", "text/event-stream; charset=utf-8")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")  # nginx/ingress: do not buffer the stream
        stop = self._stop = threading.Event()
        streams: set[threading.Event] = self.settings["ddl_streams"]
        streams.add(stop)  # the extension sets it at shutdown
        watch = job_list_watch(self.settings)
        queue = watch.subscribe()
        try:
            self.write(": stream open\n\n")
            await self.flush()
            await self._pump(queue, stop)
        except StreamClosedError:
            pass  # the client went away
        finally:
            watch.unsubscribe(queue)
            streams.discard(stop)
        with contextlib.suppress(StreamClosedError):
            self.finish()

    async def _pump(self, queue: asyncio.Queue[str], stop: threading.Event) -> None:
        idle = 0.0
        while not stop.is_set():
            try:
                frame = await asyncio.wait_for(queue.get(), timeout=1.0)
            except asyncio.TimeoutError:
                idle += 1.0
                if idle >= HEARTBEAT_S:  # finds dead connections behind proxies
                    self.write(": keep-alive\n\n")
                    await self.flush()
                    idle = 0.0
                continue
            parts = [frame]
            while not queue.empty():  # everything of one tick in one write
                parts.append(queue.get_nowait())
            self.write("".join(parts))
            await self.flush()
            idle = 0.0

    def on_connection_close(self) -> None:
        stop = getattr(self, "_stop", None)
        if stop is not None:
            stop.set()
