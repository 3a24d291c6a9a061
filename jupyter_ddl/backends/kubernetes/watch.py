"""One job's event stream: job conditions, replica states, every pod's log lines,
metrics, CPU/memory samples and waiting reasons, merged into JobEvents.

Concurrency model: small daemon threads produce raw items into ONE bounded queue
(producers block when the consumer is slow, so memory stays bounded): a list+watch of
the job object, a list+watch of its pods by the operator's labels, a watch of Warning
events, a metrics.k8s.io poller, and one follower per container (a restarted container
has a new ID and gets a new follower). The consumer (``events()``, the caller's thread)
folds items into JobStatus and yields events. Watches re-list on 410 Gone and reconnect
with backoff.
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
from .logs import follow_container
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
        self.followers: dict[str, threading.Thread] = {}  # container ID -> thread
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

    def _list_watch(
        self,
        tag: str,
        list_fn: Callable[..., Any],
        to_dict: Callable[[Any], dict[str, Any]],
        **kw: Any,
    ) -> None:
        """List, then watch from the list's resourceVersion; re-list on 410, back off on errors."""
        from kubernetes import watch
        from kubernetes.client import ApiException

        delay, rv = 0.2, None
        while not (self.stop.is_set() or self._halt.is_set()):
            try:
                if rv is None:
                    listing = list_fn(**kw)
                    listing = (
                        listing
                        if isinstance(listing, dict)
                        else self.conn.api.sanitize_for_serialization(listing)
                    )
                    for item in listing.get("items") or []:
                        self._put((tag, ("ADDED", to_dict(item))))
                    rv = listing["metadata"]["resourceVersion"]
                    self._put((tag + "-synced", None))
                w = watch.Watch()
                for ev in w.stream(list_fn, resource_version=rv, timeout_seconds=30, **kw):
                    obj = to_dict(ev["object"])
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if not self._put((tag, (ev["type"], obj))):
                        w.stop()
                        return
                delay = 0.2
            except ApiException as e:
                if e.status == 410:
                    rv = None  # history compacted: re-list (and diff) from scratch
                    continue
                if e.status in (403, 404):
                    self._put(("error", (tag, e)))
                    return
                time.sleep(delay)
                delay = min(delay * 2, 10.0)
            except Exception:  # noqa: BLE001 - network trouble of any kind: reconnect
                time.sleep(delay)
                delay = min(delay * 2, 10.0)

    def _dict(self, obj: Any) -> dict[str, Any]:
        return obj if isinstance(obj, dict) else self.conn.api.sanitize_for_serialization(obj)

    def start(self) -> None:
        co, core, ns = (
            self.conn.client("CustomObjectsApi"),
            self.conn.client("CoreV1Api"),
            self.conn.namespace,
        )

        def job_list(**kw: Any) -> Any:
            return co.list_namespaced_custom_object(self.group, self.version, ns, self.plural, **kw)

        self._spawn(
            self._list_watch,
            "job",
            job_list,
            self._dict,
            field_selector=f"metadata.name={self.name}",
        )
        self._spawn(
            self._list_watch,
            "pod",
            core.list_namespaced_pod,
            self._dict,
            namespace=ns,
            label_selector=S.pod_selector(self.kind, self.name),
        )
        self._spawn(self._list_watch, "event", core.list_namespaced_event, self._dict, namespace=ns)
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
    def _container_ids(self, pod: dict[str, Any]) -> list[tuple[str, str, bool]]:
        """(container ID, container name, is current) of the pod's main container."""
        out = []
        for cs in ((pod.get("status") or {}).get("containerStatuses") or [])[:1]:
            last = (cs.get("lastState") or {}).get("terminated") or {}
            if last.get("containerID"):
                out.append((last["containerID"], cs["name"], False))
            state = cs.get("state") or {}
            if cs.get("containerID") and ("running" in state or "terminated" in state):
                out.append((cs["containerID"], cs["name"], True))
        return out

    def _ensure_followers(self, pod: dict[str, Any]) -> None:
        pname = pod["metadata"]["name"]
        for cid, cname, current in self._container_ids(pod):
            if cid in self.followers:
                continue
            rid = self.pod_ids.get(pname)
            if rid is None:
                continue
            if current:
                t = self._spawn(self._follow, pname, cname, cid, rid)
            else:  # a container we never saw running: its log survives as "previous"
                t = self._spawn(self._previous, pname, cname, rid)
            self.followers[cid] = t

    def _current_cid(self, pod: str) -> str | None:
        from kubernetes.client import ApiException

        try:
            p = self._dict(
                self.conn.client("CoreV1Api").read_namespaced_pod(pod, self.conn.namespace)
            )
        except ApiException:
            return None
        cs = ((p.get("status") or {}).get("containerStatuses") or [{}])[0]
        return cs.get("containerID") if "running" in (cs.get("state") or {}) else None

    def _follow(self, pod: str, cname: str, cid: str, rid: str) -> None:
        follow_container(self.conn, pod, cname, lambda batch: self._put(("lines", (rid, batch))),
                         still_running=lambda: self._current_cid(pod) == cid, stop=self._halt)  # fmt: skip
        self._put(("follower-done", cid))

    def _previous(self, pod: str, cname: str, rid: str) -> None:
        from .logs import read_container

        lines = [
            x for x in read_container(self.conn, pod, cname, previous=True, stop=self._halt) if x
        ]
        self._put(("lines", (rid, lines)))
        self._put(("follower-done", None))

    # -- consumer --------------------------------------------------------------------
    def events(self) -> Iterator[JobEvent]:
        """The merged stream; ends after the job finished and every log line arrived."""
        self.start()
        try:
            yield from self._fold()
        finally:
            self._halt.set()

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
            # pod changed, and on idle ticks, not for each of thousands of log lines.
            if tag in ("lines", "usage", "follower-done") and time.monotonic() - folded < 0.25:
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
