"""Reading pod logs: one container at a time (following many at once: ``multiplex``).

Lines are asked for with ``timestamps=true`` so a watcher can drop lines written
before it started (``from_start=False``) and measure latency, and so a broken stream
can be resumed from the last timestamp delivered: the kubelet serves only the current
log file, which it rotates, so counting lines would skip the wrong ones.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

from jupyter_ddl._util import timestamps
from jupyter_ddl.backends.kubernetes.api_errors import from_api_exception
from jupyter_ddl.backends.kubernetes.connection import Connection
from jupyter_ddl.i18n import tr

#: the kubelet's answer for a container that has not started; not an error for us
NOT_STARTED = ("is waiting to start", "ContainerCreating", "PodInitializing")


def split_timestamp(line: str) -> tuple[float | None, str]:
    """``2026-11-21T23:00:00.123456789Z text`` -> (epoch seconds, text)."""
    stamp, sep, text = line.partition(" ")
    t = timestamps.parse(stamp) if sep and stamp.endswith("Z") else None
    return (None, line) if t is None else (t, text)


def iter_lines(
    resp: Any, stop: threading.Event | None, marks: bool = False
) -> Iterator[str | None]:
    """Decoded lines of a streamed (``_preload_content=False``) log response; with
    ``marks`` a None after each network chunk, so callers can hand lines on in batches."""
    pending = b""
    for chunk in resp.stream(65536, decode_content=False):
        if stop is not None and stop.is_set():
            return
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            yield raw.decode("utf-8", errors="replace").rstrip("\r")
        if marks:
            yield None
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
    marks: bool = False,
) -> Iterator[tuple[float | None, str] | None]:
    """(timestamp, text) for each line of one container; nothing when it has not started.
    ``marks``: None after each network chunk (see ``iter_lines``)."""
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
            e.status == 400 and any(s in str(e.body) for s in NOT_STARTED + ("not found",))
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
        for line in iter_lines(resp, stop, marks):
            yield None if line is None else split_timestamp(line)
    finally:
        resp.release_conn()


#: bytes read from the start of the current log file to learn its first line's time
FIRST_LINE_BYTES = 512


def rotation_gap(
    conn: Connection, pod: str, container: str | None, last: float | None
) -> str | None:
    """Before a cut follow is resumed from ``last`` (the last line's time delivered):
    when the kubelet's current log file begins after it, the file was rotated while
    nobody followed, and what was written in between is in a file the API no longer
    serves. The note that says so, naming the span; None when nothing can be missing."""
    from kubernetes.client import ApiException
    from urllib3.exceptions import HTTPError

    if last is None:
        return None
    kwargs: dict[str, Any] = {"timestamps": True, "limit_bytes": FIRST_LINE_BYTES,
                              "_preload_content": False, "_request_timeout": (10.0, 30.0)}  # fmt: skip
    if container:
        kwargs["container"] = container
    try:
        resp = conn.client("CoreV1Api").read_namespaced_pod_log(pod, conn.namespace, **kwargs)
        try:
            head = resp.data.split(b"\n", 1)[0].decode("utf-8", "replace")
        finally:
            resp.release_conn()
    except (ApiException, HTTPError, OSError):
        return None  # the resumed follow reports what is wrong; this is only a check
    first, _ = split_timestamp(head)
    if first is None or first <= last:
        return None
    return tr(
        "jupyter-ddl: lines of pod {pod} written between {start} and {end} may be lost: its "
        "log was rotated while the follow was cut, and the kubelet serves only the current file",
        pod=pod,
        start=timestamps.format_micro(last),
        end=timestamps.format_micro(first),
    )


def unread_note(pod: str) -> str:
    """The line that stands in a replica's log for lines nobody could read: its pod was
    deleted before its first follow opened."""
    return tr(
        "jupyter-ddl: the log of pod {pod} could not be read: the pod was deleted before "
        "its log was opened (an operator deletes a job's running pods when the job ends), "
        "and its lines went with it",
        pod=pod,
    )


def which_log(
    conn: Connection, pod: str, container: str | None, cid: str | None, timeout: Any = None
) -> str | None:
    """Asked of the API (the log API names no container ID): is container ``cid`` the
    pod's "current" one, its "previous" one (it restarted), neither (None: replaced
    twice), or is the pod "gone" (404)? Unanswerable (unreachable, refused) counts as
    "current": the stream backs off."""
    from kubernetes.client import ApiException

    try:
        resp = conn.client("CoreV1Api").read_namespaced_pod(
            pod, conn.namespace, _preload_content=False, _request_timeout=timeout
        )
        obj = json.loads(resp.data)
    except ApiException as e:
        return "gone" if e.status == 404 else "current"
    except Exception:  # noqa: BLE001 - unreachable: try the stream, it backs off
        return "current"
    for cs in (obj.get("status") or {}).get("containerStatuses") or []:
        if container in (None, cs.get("name")):
            if cs.get("containerID") == cid:
                return "current"
            last = (cs.get("lastState") or {}).get("terminated") or {}
            return "previous" if last.get("containerID") == cid else None
    return None
