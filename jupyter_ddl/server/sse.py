"""Server-sent events: a job's log lines, followed live, over one HTTP response.

The job API's log iterator blocks, so it runs on a worker thread that feeds a
bounded queue; the event loop drains the queue, writes a batch and flushes, so a
log flood costs a few writes per second and a slow client slows the reader thread
instead of growing memory. Closing the connection sets the ``stop`` event the
iterator honours, so no thread outlives its client.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

from tornado.iostream import StreamClosedError
from tornado.web import RequestHandler

from jupyter_ddl._util import jsonsafe
from jupyter_ddl._util.queues import put_until_stopped
from jupyter_ddl.errors import DDLError
from jupyter_ddl.models import LogLine
from jupyter_ddl.server.answers import log_dict

log = logging.getLogger(__name__)

_DONE = object()  # end of stream marker put by the reader thread
POLL_S = 0.1  # how often the writer looks at the queue when it was empty
HEARTBEAT_S = 15.0  # a comment line this often finds dead connections behind proxies
BATCH = 500  # at most this many events per write


def format_event(event: str, data: Any, event_id: str | None = None) -> str:
    """One SSE frame. ``data`` is JSON-encoded on one line, so no frame splitting."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {jsonsafe.dumps(data, separators=(',', ':'))}\n\n"


def log_event(line: LogLine) -> str:
    return format_event("log", log_dict(line), f"{line.replica}:{line.offset}")


def resume_offset(last_event_id: str | None, replica: str | None) -> int | None:
    """The offset after ``Last-Event-ID`` (``worker-0:41`` → 42) when it names the
    replica being followed; None otherwise (the client's own offset then applies)."""
    if not last_event_id or not replica:
        return None
    rid, _, off = last_event_id.rpartition(":")
    if rid != replica or not off.isdigit():
        return None
    return int(off) + 1


def _pump(lines: Iterator[LogLine], out: queue.Queue[Any], stop: threading.Event) -> None:
    """Reader thread: iterator → queue. Errors travel to the writer as values."""
    try:
        for line in lines:
            if not put_until_stopped(out, line, stop, poll=0.5):
                return
    except DDLError as e:
        out.put(e)
    except Exception as e:  # the HTTP boundary: report it as an event, keep the server up
        log.exception("log stream of a job failed")
        out.put(e)
    finally:
        out.put(_DONE)


async def stream_logs(
    handler: RequestHandler,
    lines: Iterator[LogLine],
    stop: threading.Event,
    final: Callable[[], dict[str, Any]],
) -> None:
    """Write ``lines`` as SSE ``log`` events until the iterator ends (the job ended
    and every line was sent), then one ``end`` event carrying ``final()``; an error
    becomes one ``error`` event with its one-line message."""
    handler.set_header("Content-Type", "text/event-stream; charset=utf-8")
    handler.set_header("Cache-Control", "no-cache")
    handler.set_header("X-Accel-Buffering", "no")  # nginx/ingress: do not buffer the stream
    q: queue.Queue[Any] = queue.Queue(maxsize=4 * BATCH)
    reader = threading.Thread(target=_pump, args=(lines, q, stop), daemon=True, name="ddl-sse")
    reader.start()
    loop = asyncio.get_running_loop()
    idle = 0.0
    try:
        handler.write(": stream open\n\n")
        await handler.flush()
        while not stop.is_set():
            chunk, done = _drain(q)
            if chunk:
                handler.write(chunk)
                await handler.flush()
                idle = 0.0
            if done is not None:
                if isinstance(done, BaseException):
                    handler.write(format_event("error", {"message": str(done)}))
                else:
                    handler.write(format_event("end", await loop.run_in_executor(None, final)))
                await handler.flush()
                return
            if not chunk:
                await asyncio.sleep(POLL_S)
                idle += POLL_S
                if idle >= HEARTBEAT_S:
                    handler.write(": keep-alive\n\n")
                    await handler.flush()
                    idle = 0.0
    except StreamClosedError:
        pass  # the client went away; stop below ends the reader
    finally:
        stop.set()


def _drain(q: queue.Queue[Any]) -> tuple[str, object | None]:
    """Up to BATCH queued events as text, and the end marker or error if reached."""
    parts: list[str] = []
    while len(parts) < BATCH:
        try:
            item = q.get_nowait()
        except queue.Empty:
            break
        if item is _DONE or isinstance(item, BaseException):
            return "".join(parts), item
        parts.append(log_event(item))
    return "".join(parts), None
