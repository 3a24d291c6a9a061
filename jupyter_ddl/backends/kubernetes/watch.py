"""One job's event stream: job conditions, replica states, every pod's log lines,
metrics, CPU/memory samples and waiting reasons, merged into JobEvents.

Concurrency model: small daemon threads produce raw items into ONE bounded queue
(producers block when the consumer is slow, so memory stays bounded): a list+watch of
the job object, a list+watch of its pods by the operator's labels, a watch of Warning
events, a metrics.k8s.io poller, and the log multiplexer (``multiplex``: one selector
thread and a few opener threads follow every container, however many pods; a restarted
container has a new ID and gets a new follower). The consumer (``events()``, the
caller's thread) folds items into JobStatus and yields events. Watches read the API's
raw JSON lines (no model objects), re-list on 410 Gone and reconnect with backoff.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from ...metrics import parse_metric_line
from ...models import EventKind, JobEvent, JobState, JobStatus, LogLine, ReplicaStatus
from . import status as S
from .connection import Connection
from .logs import iter_lines
from .multiplex import LogMultiplexer, Stream
from .reasons import event_waiting
from .usage import poll_usage

LAST_LINES = 20
#: seconds to wait for log streams of replicas still running after the job ended
FINISH_GRACE = 10.0


class JobWatcher:
    def __init__(self, conn: Connection, kind: str, api_version: str, plural: str, name: str, *,
                 stop: threading.Event | None = None, from_start: bool = True, usage_every: float = 5.0,
                 maxsize: int = 2000) -> None:  # fmt: skip
        self.conn, self.kind, self.name = conn, kind, name
        self.group, _, self.version = api_version.rpartition("/")
        self.plural = plural
        self.stop = stop or threading.Event()
        self._halt = threading.Event()  # ends our threads (set when the stream ends)
        self.start_time = None if from_start else time.time()
        self.usage_every = usage_every
        self.q: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize)
        self.job: dict[str, Any] | None = None
        self.pods: dict[str, dict[str, Any]] = {}
        self.followers: dict[str, Stream] = {}  # container ID -> its follower
        self._last_follower: dict[str, Stream] = {}  # replica id -> its latest follower
        self._mux: LogMultiplexer | None = None
        self._watches: set[Any] = set()  # open watch responses, cut when we stop
        self._wlock = threading.Lock()
        self.offsets: dict[str, int] = {}  # replica id -> next line offset
        self.last_lines: dict[str, deque[str]] = {}
        self.pod_ids: dict[str, str] = {}  # pod name -> replica id
        self._latest: dict[str, float] = {}  # latest value of each training metric
        self._finished_at: float | None = None

    # -- producers ------------------------------------------------------------------
    def _put(self, item: tuple[str, Any]) -> bool:
        while not (self.stop.is_set() or self._halt.is_set()):
            try:
                self.q.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def _spawn(self, target: Callable[..., None], *args: Any, **kwargs: Any) -> threading.Thread:
        t = threading.Thread(
            target=target, args=args, kwargs=kwargs, daemon=True, name=f"ddl-k8s-{self.name}"
        )
        t.start()
        return t

    def _list_watch(self, tag: str, list_fn: Callable[..., Any], **kw: Any) -> None:
        """List, then watch from the list's resourceVersion; re-list on 410, back off on
        errors. Reads the raw JSON (``_preload_content=False``): objects stay the dicts
        the API sent, never built into the client's models and turned back into dicts."""
        from kubernetes.client import ApiException

        delay, rv = 0.2, None
        while not (self.stop.is_set() or self._halt.is_set()):
            try:
                if rv is None:
                    resp = list_fn(_preload_content=False, **kw)
                    try:
                        listing = json.loads(resp.data)
                    finally:
                        resp.release_conn()
                    for item in listing.get("items") or []:
                        self._put((tag, ("ADDED", item)))
                    rv = listing["metadata"]["resourceVersion"]
                    self._put((tag + "-synced", None))
                rv = self._watch_from(tag, list_fn, rv, **kw)
                delay = 0.2
            except ApiException as e:
                if e.status == 410:
                    rv = None  # history compacted: re-list (and diff) from scratch
                    continue
                if e.status in (403, 404):
                    self._put(("error", (tag, e)))
                    return
                self._halt.wait(delay)
                delay = min(delay * 2, 10.0)
            except Exception:  # noqa: BLE001 - network trouble of any kind: reconnect
                self._halt.wait(delay)
                delay = min(delay * 2, 10.0)

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

    def _cut_watches(self) -> None:
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

    def start(self) -> None:
        co, core, ns = (
            self.conn.client("CustomObjectsApi"),
            self.conn.client("CoreV1Api"),
            self.conn.namespace,
        )

        def job_list(**kw: Any) -> Any:
            return co.list_namespaced_custom_object(self.group, self.version, ns, self.plural, **kw)

        self._mux = LogMultiplexer(
            self.conn,
            lambda rid, batch: self._put(("lines", (rid, batch))),
            on_done=lambda cid: self._put(("follower-done", cid)),
            still_running=self._container_running,
            on_error=lambda rid, err: self._put(("log-error", (rid, err))),
        )
        self._spawn(self._list_watch, "job", job_list, field_selector=f"metadata.name={self.name}")
        self._spawn(
            self._list_watch,
            "pod",
            core.list_namespaced_pod,
            namespace=ns,
            label_selector=S.pod_selector(self.kind, self.name),
        )
        self._spawn(self._list_watch, "event", core.list_namespaced_event, namespace=ns)
        if self.usage_every > 0:
            self._spawn(
                poll_usage,
                self.conn,
                S.pod_selector(self.kind, self.name),
                self.usage_every,
                self._put,
                self._halt,
            )

    # -- log followers --------------------------------------------------------------------
    def _container_running(self, pod: str, cid: str | None) -> bool:
        """From the pod watch (no request): whether container ``cid`` is the pod's
        current one and runs. A stale answer costs one extra stream open at most."""
        cs = followed_status(self.pods.get(pod) or {}) or {}
        return cs.get("containerID") == cid and "running" in (cs.get("state") or {})

    def _ensure_followers(self, pod: dict[str, Any]) -> None:
        pname = pod["metadata"]["name"]
        rid = self.pod_ids.get(pname)
        if rid is None or self._mux is None:
            return
        for cid, cname, current in container_ids(pod):
            if cid in self.followers:
                continue
            after = self._last_follower.get(rid)  # its lines come first
            if current:
                f = self._mux.follow(pname, cname, cid, rid, after=after)
            else:  # a container we never saw running: its log survives as "previous"
                f = self._mux.previous(pname, cname, rid, after=after)
            self.followers[cid] = self._last_follower[rid] = f

    # -- consumer --------------------------------------------------------------------
    def events(self) -> Iterator[JobEvent]:
        """The merged stream; ends after the job finished and every log line arrived."""
        self.start()
        try:
            yield from self._fold()
        finally:
            self._halt.set()
            if self._mux is not None:
                self._mux.close()
            self._cut_watches()

    def _status(self) -> JobStatus | None:
        if self.job is None:
            return None
        return S.job_status(self.kind, self.job, list(self.pods.values()), self.conn.namespace)

    def _fold(self) -> Iterator[JobEvent]:
        last_state: JobState | None = None
        replicas: dict[str, ReplicaStatus] = {}
        waiting: dict[str, str | None] = {}
        synced: set[str] = set()
        gone, folded = False, 0.0
        while not self.stop.is_set():
            try:
                tag, item = self.q.get(timeout=0.2)
            except queue.Empty:
                tag, item = "tick", None
            if tag == "job":
                etype, obj = item
                gone = etype == "DELETED"
                self.job = obj if not gone else self.job
                if last_state is None and obj:
                    yield from self._warnings(obj)
            elif tag == "pod":
                etype, pod = item
                pname = pod["metadata"]["name"]
                if etype == "DELETED":
                    self.pods.pop(pname, None)
                else:
                    self.pods[pname] = pod
                    key = S.pod_replica(self.kind, pod)
                    if key:
                        self.pod_ids[pname] = f"{key[0].lower()}-{key[1]}"
                    self._ensure_followers(pod)
            elif tag == "lines":
                rid, batch = item
                for stamp, text in batch:
                    yield from self._line(rid, stamp, text)
            elif tag == "event":
                ev = item[1]
                involved = (ev.get("involvedObject") or {}).get("name", "")
                if involved == self.name or involved in self.pods:
                    msg = event_waiting(ev)
                    if msg and self._fresh(ev):
                        yield JobEvent(
                            EventKind.WAITING,
                            self.name,
                            replica=self.pod_ids.get(involved),
                            message=msg,
                        )
            elif tag == "log-error":
                rid, err = item
                yield JobEvent(EventKind.WAITING, self.name, replica=rid, message=str(err))
            elif tag == "usage":
                pname, values = item
                if pname in self.pod_ids:
                    yield JobEvent(
                        EventKind.RESOURCE, self.name, replica=self.pod_ids[pname], metrics=values
                    )
            elif tag.endswith("-synced"):
                synced.add(tag)
            elif tag == "error":
                src, exc = item
                if src == "job":
                    from .errors import from_api_exception

                    raise from_api_exception(
                        exc,
                        action=f"watching {self.kind} {self.name}",
                        kind=self.kind,
                        name=self.name,
                    )
            # Folding the status costs a pass over every pod: do it when the job or a
            # pod changed, and on idle ticks, not for each of thousands of log lines;
            # a burst of pod changes (a hundred pods starting) folds once it is read.
            since = time.monotonic() - folded
            if tag in ("lines", "usage", "follower-done") and since < 0.25:
                continue
            if tag == "pod" and since < 0.1 and not self.q.empty():
                continue
            folded = time.monotonic()
            st = self._status()
            if st is None:
                if gone:
                    return
                continue
            for r in st.replicas:
                old = replicas.get(r.id)
                if old is None or (old.state, old.restarts, old.exit_code) != (
                    r.state,
                    r.restarts,
                    r.exit_code,
                ):
                    if r.state.finished or r.restarts:
                        r.last_lines = list(self.last_lines.get(r.id, ()))
                    replicas[r.id] = r
                    yield JobEvent(EventKind.REPLICA, self.name, replica=r.id, replica_status=r)
                if r.message != waiting.get(r.id):
                    waiting[r.id] = r.message
                    if r.message and (not r.state.finished or r.message.startswith("OOMKilled")):
                        yield JobEvent(
                            EventKind.WAITING, self.name, replica=r.id, message=r.message
                        )
            if st.state != last_state and not st.state.finished:
                last_state = st.state
                yield JobEvent(EventKind.STATUS, self.name, status=st)
            if (st.state.finished or gone) and self._finished_at is None:
                self._finished_at = time.monotonic()
            if self._finished_at is not None and "pod-synced" in synced and self._drained():
                st.metrics = dict(self._latest)
                yield JobEvent(EventKind.STATUS, self.name, status=st)
                return

    def _drained(self) -> bool:
        """Every follower ended and its lines were consumed. Replicas left running
        after the job ended (cleanPodPolicy None) get a grace period, not forever."""
        for pod in list(self.pods.values()):
            self._ensure_followers(pod)
        if self._finished_at is not None and time.monotonic() - self._finished_at > FINISH_GRACE:
            return self.q.empty()
        return all(not t.is_alive() for t in self.followers.values()) and self.q.empty()

    def _fresh(self, ev: dict[str, Any]) -> bool:
        if self.start_time is None:
            return True
        ts = ev.get("lastTimestamp") or ev.get("eventTime") or ""
        return S._epoch(ts) is None or (S._epoch(ts) or 0) >= int(self.start_time)

    def _warnings(self, obj: dict[str, Any]) -> Iterator[JobEvent]:
        raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(S.ANNOTATION_WARNINGS)
        for msg in json.loads(raw) if raw else []:
            yield JobEvent(EventKind.WAITING, self.name, message=f"warning: {msg}")

    def _line(self, rid: str, stamp: float | None, text: str) -> Iterator[JobEvent]:
        off = self.offsets.get(rid, 0)
        self.offsets[rid] = off + 1
        self.last_lines.setdefault(rid, deque(maxlen=LAST_LINES)).append(text)
        if self.start_time is not None and stamp is not None and stamp < self.start_time:
            return
        yield JobEvent(EventKind.LOG, self.name, replica=rid, log=LogLine(rid, off, text, stamp))
        m = parse_metric_line(text)
        if m is not None:
            self._latest.update(m.values)
            yield JobEvent(EventKind.METRIC, self.name, replica=rid, metrics=m.values, step=m.step)


def followed_status(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The status of the container whose log is the replica's log: the pod's first
    (the operators put the framework's container first). The one place that decides
    which container of a pod is followed."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return statuses[0] if statuses else None


def container_ids(pod: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(container ID, container name, is current) of the followed container's earlier
    run (``lastState``) and of its current run once it has started."""
    cs = followed_status(pod)
    if cs is None:
        return []
    out = []
    last = (cs.get("lastState") or {}).get("terminated") or {}
    if last.get("containerID"):
        out.append((last["containerID"], cs["name"], False))
    state = cs.get("state") or {}
    if cs.get("containerID") and ("running" in state or "terminated" in state):
        out.append((cs["containerID"], cs["name"], True))
    return out
