"""Reading pod logs: one container at a time, followed or not.

Lines are asked for with ``timestamps=true`` so a watcher can drop lines written
before it started (``from_start=False``) and measure latency, and so a broken stream
can be resumed by skipping the lines already delivered (a container's log only grows).
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from .connection import Connection
from .errors import from_api_exception

#: the kubelet's answer for a container that has not started; not an error for us
_NOT_STARTED = ("is waiting to start", "ContainerCreating", "PodInitializing")


def split_timestamp(line: str) -> tuple[float | None, str]:
    """``2026-11-21T23:00:00.123456789Z text`` -> (epoch seconds, text)."""
    stamp, sep, text = line.partition(" ")
    if not sep or not stamp.endswith("Z") or "T" not in stamp:
        return None, line
    head, _, frac = stamp[:-1].partition(".")
    try:
        dt = datetime.datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").replace(
            tzinfo=datetime.timezone.utc
        )
    except ValueError:
        return None, line
    return dt.timestamp() + (float("0." + frac) if frac.isdigit() else 0.0), text


def iter_lines(resp: Any, stop: threading.Event | None) -> Iterator[str]:
    """Decoded lines of a streamed (``_preload_content=False``) log response."""
    pending = b""
    for chunk in resp.stream(4096, decode_content=False):
        if stop is not None and stop.is_set():
            return
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            yield raw.decode("utf-8", errors="replace").rstrip("\r")
    if pending:
        yield pending.decode("utf-8", errors="replace")


def read_container(
    conn: Connection,
    pod: str,
    container: str | None,
    *,
    previous: bool = False,
    follow: bool = False,
    tail: int | None = None,
    since_seconds: int | None = None,
    stop: threading.Event | None = None,
) -> Iterator[tuple[float | None, str]]:
    """(timestamp, text) for each line of one container; nothing when it has not started."""
    from kubernetes.client import ApiException

    kwargs: dict[str, Any] = {"timestamps": True, "_preload_content": False}
    if container:
        kwargs["container"] = container
    if previous:
        kwargs["previous"] = True
    if follow:
        kwargs["follow"] = True
    if tail is not None:
        kwargs["tail_lines"] = tail
    if since_seconds is not None:
        kwargs["since_seconds"] = since_seconds
    try:
        resp = conn.client("CoreV1Api").read_namespaced_pod_log(pod, conn.namespace, **kwargs)
    except ApiException as e:
        if e.status == 404 or (
            e.status == 400 and any(s in str(e.body) for s in _NOT_STARTED + ("not found",))
        ):
            return
        raise from_api_exception(
            e,
            action=f"reading the log of pod {pod}",
            verb="get",
            resource="pods/log",
            namespace=conn.namespace,
        ) from e
    try:
        for line in iter_lines(resp, stop):
            yield split_timestamp(line)
    finally:
        resp.release_conn()


def follow_container(
    conn: Connection,
    pod: str,
    container: str | None,
    emit: Callable[[float | None, str], bool],
    *,
    still_running: Callable[[], bool],
    stop: threading.Event,
    skip: int = 0,
) -> int:
    """Follow one container until it ends, resuming a broken stream without repeats.

    ``emit`` returns False to stop early. Returns how many lines were delivered.
    """
    import urllib3

    delivered, delay = skip, 0.2
    while not stop.is_set():
        seen = 0
        try:
            for stamp, text in read_container(conn, pod, container, follow=True, stop=stop):
                seen += 1
                if seen <= delivered:
                    continue  # already delivered before a reconnect
                delivered += 1
                if not emit(stamp, text):
                    return delivered
            if not still_running():
                return delivered
        except (urllib3.exceptions.HTTPError, OSError):
            if not still_running():
                return delivered
        time.sleep(delay)  # the stream ended while the container runs: reconnect
        delay = min(delay * 2, 5.0)
    return delivered
