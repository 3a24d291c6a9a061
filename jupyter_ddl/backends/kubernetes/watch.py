"""One job's event stream: job conditions, replica states, every pod's log lines,
metrics, CPU/memory samples and waiting reasons, merged into JobEvents.

Concurrency model: small daemon threads produce raw items into ONE bounded queue
(producers block when the consumer is slow, so memory stays bounded): a list+watch of
the job object, a list+watch of its pods by the operator's labels, a watch of Warning
events, a metrics.k8s.io poller, and the log multiplexer (``multiplex``: one selector
thread and a few opener threads follow every container, however many pods; a restarted
container has a new ID and gets a new follower). The consumer (``events()``, the
caller's thread) folds items into JobStatus and yields events. The list+watch producers
(``listwatch``) re-list on 410 Gone, and the re-list is the whole truth: a pod deleted
while nobody watched leaves the table.

Besides pod reasons, the operators' own refusals reach the user (a pod the API server
refused is only an event on the job or its batch Job, operator-contract.md §10.18), and
a job that has no status and no pod after ``NO_STATUS_AFTER`` seconds is reported as
such: its operator is probably not running.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from ...kinds import Kind
from ...metrics import is_metric_line, parse_metric_line
from ...models import EventKind, JobEvent, JobState, JobStatus, LogLine, ReplicaStatus, replica_id
from . import status as S
from .connection import Connection
from .listwatch import ListWatch
from .multiplex import LogMultiplexer, Stream
from .objects import CustomObjects
from .reasons import EVENT_REASONS, event_waiting
from .usage import poll_usage

LAST_LINES = 20
#: seconds to wait for log streams of replicas still running after the job ended
FINISH_GRACE = 10.0
#: seconds without a status and without a pod after which the operator is suspected
NO_STATUS_AFTER = 5.0


class JobWatcher:
    """Watches job ``name`` of ``kind``; ``conn`` is scoped to the job's namespace."""

    def __init__(self, conn: Connection, kind: Kind, name: str, *,
                 stop: threading.Event | None = None, from_start: bool = True, usage_every: float = 5.0,
                 maxsize: int = 2000, no_status_after: float = NO_STATUS_AFTER,
                 raw: bool = False) -> None:  # fmt: skip
        self.conn, self.kind, self.name = conn, kind, name
        self.no_status_after = no_status_after
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
        self._lw = ListWatch(self._put, self._halt, self.stop)
        self.offsets: dict[str, int] = {}  # replica id -> next line offset
        self.last_lines: dict[str, deque[str]] = {}
        self.pod_ids: dict[str, str] = {}  # pod name -> replica id
        self.gone: dict[str, dict[str, Any]] = {}  # last state of each deleted pod
        self._latest: dict[str, float] = {}  # latest value of each training metric
        self._finished_at: float | None = None
        self._began = time.monotonic()
        self._told_no_status = False
        self.raw = raw  # LOG events for report() lines too (a raw log follower)

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

    def start(self) -> None:
        core, ns = self.conn.client("CoreV1Api"), self.conn.namespace
        job_list = CustomObjects(self.conn, self.kind).list_fn()

        self._mux = LogMultiplexer(
            self.conn,
            lambda rid, batch: self._put(("lines", (rid, batch))),
            on_done=lambda cid: self._put(("follower-done", cid)),
            still_running=self._container_running,
            on_error=lambda rid, err: self._put(("log-error", (rid, err))),
        )
        self._spawn(self._lw.run, "job", job_list, field_selector=f"metadata.name={self.name}")
        self._spawn(
            self._lw.run,
            "pod",
            core.list_namespaced_pod,
            namespace=ns,
            label_selector=self.kind.pod_selector(self.name),
        )
        self._spawn(self._lw.run, "event", core.list_namespaced_event, namespace=ns)
        if self.usage_every > 0:
            self._spawn(
                poll_usage,
                self.conn,
                self.kind.pod_selector(self.name),
                self.usage_every,
                self._put,
                self._halt,
            )

    # -- log followers --------------------------------------------------------------------
    def _container_running(self, pod: str, cid: str | None) -> bool:
        """From the pod watch (no request): whether container ``cid`` is the pod's
        current one and runs. A stale answer costs one extra stream open at most."""
        cs = S.container_status(self.kind, self.pods.get(pod) or {}) or {}
        return cs.get("containerID") == cid and "running" in (cs.get("state") or {})

    def _ensure_followers(self, pod: dict[str, Any]) -> None:
        pname = pod["metadata"]["name"]
        rid = self.pod_ids.get(pname)
        if rid is None or self._mux is None:
            return
        for cid, cname, current in container_ids(self.kind, pod):
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
            self._lw.cut()

    def _status(self) -> JobStatus | None:
        if self.job is None:
            return None
        # pods deleted as the job ended (its pod deletions may be heard before its end)
        gone = list(self.gone.values()) if self._job_over() else []
        return S.job_status(self.kind, self.job, list(self.pods.values()), self.conn.namespace,
                            gone=gone, last_lines=self.last_lines)  # fmt: skip

    def _pod_event(self, etype: str, pod: dict[str, Any]) -> None:
        pname = pod["metadata"]["name"]
        if etype == "DELETED":
            old = self.pods.pop(pname, None)
            if old is not None:
                self.gone[pname] = old  # once the job is over, its replica stays, ended
            return
        self.pods[pname] = pod
        self.gone.pop(pname, None)
        key = self.kind.pod_replica(pod)
        if key:
            self.pod_ids[pname] = replica_id(*key)
        self._ensure_followers(pod)

    def _job_over(self) -> bool:
        """Has the job ended (as far as this watcher has heard)?"""
        conds = ((self.job or {}).get("status") or {}).get("conditions") or []
        ended = {t for t, _ in S.TERMINAL}
        return any(c.get("type") in ended and c.get("status") == "True" for c in conds)

    def _resynced(self, tag: str, names: set[str]) -> bool:
        """A re-list is the whole truth: forget what it no longer holds. True when the
        job itself is gone."""
        if tag == "pod-synced":
            for pname in [p for p in self.pods if p not in names]:
                self._pod_event("DELETED", self.pods[pname])
        return tag == "job-synced" and self.job is not None and self.name not in names

    def _concerns(self, ev: dict[str, Any]) -> str | None:
        """A Warning event about this job, its pods or its batch Jobs, as one line."""
        involved = (ev.get("involvedObject") or {}).get("name", "")
        if involved not in self.pods and involved not in self.kind.event_objects(self.name):
            return None
        reason = ev.get("reason") or ""
        if reason not in EVENT_REASONS and reason not in self.kind.refusal_events:
            return None
        return event_waiting(ev, self.kind.refusal_events) if self._fresh(ev) else None

    def _silent_operator(self) -> str | None:
        """One line when the job still has no status and no pod after a while."""
        if self._told_no_status or self.job is None or self.pods or self.job.get("status"):
            return None
        waited = time.monotonic() - self._began
        if waited < self.no_status_after:
            return None
        self._told_no_status = True
        return (
            f"{self.kind} {self.name} has no status and no pod after {waited:.0f} s: "
            f"is {self.kind.operator} running, and watching namespace {self.conn.namespace}?"
        )

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
            silent = self._silent_operator()
            if silent:
                yield JobEvent(EventKind.WAITING, self.name, message=silent)
            if tag == "job":
                etype, obj = item
                gone = etype == "DELETED"
                self.job = obj if not gone else self.job
                if last_state is None and obj:
                    yield from self._warnings(obj)
            elif tag == "pod":
                self._pod_event(*item)
            elif tag == "lines":
                rid, batch = item
                for stamp, text in batch:
                    yield from self._line(rid, stamp, text)
            elif tag == "event":
                ev = item[1]
                msg = self._concerns(ev)
                if msg:
                    involved = (ev.get("involvedObject") or {}).get("name", "")
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
                gone = self._resynced(tag, item) or gone
            elif tag == "error":
                src, exc = item
                if src == "job":
                    from .errors import from_api_exception

                    raise from_api_exception(
                        exc,
                        action=f"watching {self.kind} {self.name}",
                        kind=self.kind,
                        name=self.name,
                        namespace=self.conn.namespace,
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
        return S.epoch(ts) is None or (S.epoch(ts) or 0) >= int(self.start_time)

    def _warnings(self, obj: dict[str, Any]) -> Iterator[JobEvent]:
        raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(S.ANNOTATION_WARNINGS)
        for msg in json.loads(raw) if raw else []:
            yield JobEvent(EventKind.WAITING, self.name, message=f"warning: {msg}")

    def _line(self, rid: str, stamp: float | None, text: str) -> Iterator[JobEvent]:
        off = self.offsets.get(rid, 0)
        self.offsets[rid] = off + 1
        if not is_metric_line(text):
            self.last_lines.setdefault(rid, deque(maxlen=LAST_LINES)).append(text)
        if self.start_time is not None and stamp is not None and stamp < self.start_time:
            return
        if self.raw or not is_metric_line(text):  # report() lines: METRIC events only
            yield JobEvent(
                EventKind.LOG, self.name, replica=rid, log=LogLine(rid, off, text, stamp)
            )
        m = parse_metric_line(text)
        if m is not None:
            self._latest.update(m.values)
            yield JobEvent(
                EventKind.METRIC, self.name, replica=rid, metrics=m.values, step=m.step,
                source=m.source,
            )  # fmt: skip


def container_ids(kind: Kind, pod: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(container ID, container name, is current) of the replica's container
    (``status.container_status``): its earlier run (``lastState``) and its current run
    once it has started."""
    cs = S.container_status(kind, pod)
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
