"""The producers of one job's watch: list+watch threads for the job, its pods and the
namespace's events, the metrics poller, and the log multiplexer; each puts typed items
(``items``) into the watcher's one queue."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from jupyter_ddl.backends.kubernetes import items as I
from jupyter_ddl.backends.kubernetes.connection import Connection
from jupyter_ddl.backends.kubernetes.listwatch import ListWatch
from jupyter_ddl.backends.kubernetes.multiplex import LogMultiplexer
from jupyter_ddl.backends.kubernetes.objects import CustomObjects
from jupyter_ddl.backends.kubernetes.usage import poll_usage
from jupyter_ddl.core.kinds import Kind


class JobWatcher(Protocol):
    """What the producers use of ``watch.JobWatcher`` (named here, not imported: the
    watcher imports this module)."""

    conn: Connection
    kind: Kind
    name: str
    usage_every: float
    _lw: ListWatch
    _halt: threading.Event
    _mux: LogMultiplexer | None

    def _put(self, item: I.Item) -> bool: ...

    def _container_running(self, pod: str, cid: str | None) -> bool: ...

    def _may_restart(self, pod: str) -> bool: ...


def _spawn(
    w: JobWatcher, target: Callable[..., None], *args: Any, **kwargs: Any
) -> threading.Thread:
    t = threading.Thread(
        target=target, args=args, kwargs=kwargs, daemon=True, name=f"ddl-k8s-{w.name}"
    )
    t.start()
    return t


def start(w: JobWatcher) -> None:
    """Start every producer of ``w``; ``w`` owns the log multiplexer."""
    core, ns = w.conn.client("CoreV1Api"), w.conn.namespace
    job_list = CustomObjects(w.conn, w.kind).list_fn()

    mux = LogMultiplexer(
        w.conn,
        lambda rid, batch: w._put(I.Lines(rid, batch)),
        on_done=lambda s: w._put(I.FollowerDone(s)),
        still_running=w._container_running,
        may_restart=w._may_restart,
        on_error=lambda rid, err: w._put(I.LogFailed(rid, err)),
        on_lost=lambda cause: w._put(I.LostContact(cause)),
    )
    w._mux = mux  # before any producer runs: pod items start followers
    _spawn(w, w._lw.run, I.JobChanged, job_list, field_selector=f"metadata.name={w.name}")
    _spawn(
        w,
        w._lw.run,
        I.PodChanged,
        core.list_namespaced_pod,
        namespace=ns,
        label_selector=w.kind.pod_selector(w.name),
    )
    _spawn(w, w._lw.run, I.EventSeen, core.list_namespaced_event, namespace=ns)
    if w.usage_every > 0:
        _spawn(
            w,
            poll_usage,
            w.conn,
            w.kind.pod_selector(w.name),
            w.usage_every,
            w._put,
            w._halt,
        )
