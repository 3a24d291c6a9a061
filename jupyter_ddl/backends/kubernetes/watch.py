"""One job's event stream: job conditions, replica states, every pod's log lines,
metrics, CPU/memory samples and waiting reasons, merged into JobEvents.

Concurrency model: small daemon threads produce typed items (``items``) into ONE bounded
queue (producers block when the consumer is slow, so memory stays bounded), one handler
each here: a list+watch of the job object, a list+watch of its pods by the operator's
labels, a watch of Warning events, a metrics.k8s.io poller, and the log multiplexer
(``multiplex``: one selector thread and a few opener threads follow every container,
however many pods; a restarted container has a new ID and gets a new follower). The
consumer (``events()``, the caller's thread) folds items into JobStatus and yields
events. The list+watch producers (``listwatch``) re-list on 410 Gone, and the re-list is
the whole truth: a pod deleted while nobody watched leaves the table. A producer that
fails says so ("lost contact with the API: …; retrying") and retries after a back-off.

Besides pod reasons, the operators' own refusals reach the user (a pod the API server
refused is only an event on the job or its batch Job, operator-contract.md §10.18), and
a job that has no status and no pod after ``NO_STATUS_AFTER`` seconds is reported as
such: its operator is probably not running.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from typing import Any

from jupyter_ddl._util.queues import put_until_stopped
from jupyter_ddl.backends.folds import line_events, replica_events
from jupyter_ddl.backends.kubernetes import items as I
from jupyter_ddl.backends.kubernetes import producers, stalls
from jupyter_ddl.backends.kubernetes import status as S
from jupyter_ddl.backends.kubernetes.connection import Connection
from jupyter_ddl.backends.kubernetes.listwatch import ListWatch
from jupyter_ddl.backends.kubernetes.logstream import Stream
from jupyter_ddl.backends.kubernetes.multiplex import LogMultiplexer
from jupyter_ddl.backends.kubernetes.reasons import EVENT_REASONS, event_waiting, last_seen
from jupyter_ddl.backends.kubernetes.status import container_ids
from jupyter_ddl.core.kinds import Kind
from jupyter_ddl.core.metrics import is_metric_line
from jupyter_ddl.models import (
    EventKind,
    JobEvent,
    JobState,
    JobStatus,
    LogLine,
    ReplicaStatus,
    replica_id,
)

LAST_LINES = 100  # as the local backend: torchrun's failure summary and a child's traceback
#: seconds to wait for log streams of replicas still running after the job ended
FINISH_GRACE = 10.0
#: seconds the final status waits after the job's end is heard: the job and its pods
#: come on two watches, and a pod's last change (a restart counted, then the pod deleted
#: by the job's end) may arrive just after the job's
FINISH_SETTLE = 0.5
#: seconds a restarted or ended replica's event waits for its ended container's lines
LINES_WAIT = 3.0
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
        self.q: queue.Queue[I.Item] = queue.Queue(maxsize)
        self.job: dict[str, Any] | None = None
        self.pods: dict[str, dict[str, Any]] = {}
        self.followers: dict[str, Stream] = {}  # container ID -> its follower
        self._read_out: set[Stream] = set()  # ended followers whose lines were consumed
        self._last_follower: dict[str, Stream] = {}  # replica id -> its latest follower
        self._mux: LogMultiplexer | None = None
        self._lw = ListWatch(self._put, self._halt, self.stop)
        self.offsets: dict[str, int] = {}  # replica id -> next line offset
        self.last_lines: dict[str, deque[str]] = {}
        self.pod_ids: dict[str, str] = {}  # pod name -> replica id
        self.gone: dict[str, dict[str, Any]] = {}  # last state of each deleted pod
        self.failures: dict[str, dict[str, Any]] = {}  # pod uid -> S.own_failure seen
        self._latest: dict[str, float] = {}  # latest value of each training metric
        self._finished_at: float | None = None
        self._began = time.monotonic()
        self._told_no_status = False
        self._gave_up = False
        self._acted = False  # an event about the job's own objects was seen
        self.raw = raw  # LOG events for report() lines too (a raw log follower)
        # what the fold has seen: the announced state, each replica's change key and
        # message, the producers whose list is complete, whether the job was deleted
        self._last_state: JobState | None = None
        self._seen_replicas: dict[str, Hashable] = {}
        self._waiting: dict[str, str | None] = {}
        self._held: dict[str, float] = {}  # replica -> since when its event waits for lines
        self._synced: set[type[I.Changed]] = set()
        self._gone = False

    # -- producers ------------------------------------------------------------------
    def _put(self, item: I.Item) -> bool:
        return put_until_stopped(self.q, item, self.stop, self._halt)

    def start(self) -> None:
        producers.start(self)

    # -- log followers --------------------------------------------------------------------
    def _container_running(self, pod: str, cid: str | None) -> bool:
        """From the pod watch (no request): a stale answer costs one stream open at most."""
        return S.runs(self.kind, self.pods.get(pod) or {}, cid)

    def _may_restart(self, pod: str) -> bool:
        return S.may_restart(self.pods.get(pod) or {})

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
        gone = list(self.gone.values()) if S.job_over(self.job) else []
        return S.job_status(self.kind, self.job, list(self.pods.values()), self.conn.namespace,
                            gone=gone, last_lines=self.last_lines, seen_failures=self.failures)  # fmt: skip

    def _pod_event(self, etype: str, pod: dict[str, Any]) -> None:
        pname = pod["metadata"]["name"]
        if (failed := S.own_failure(self.kind, pod)) is not None:  # kept: the pod's end may hide it
            self.failures[pod["metadata"].get("uid") or ""] = failed
        if etype == "DELETED":
            old = self.pods.pop(pname, None)
            if old is not None:  # once the job is over, its replica stays, ended, as the
                # deletion shows it last (a restart counted just before it was deleted)
                self.gone[pname] = pod if pod.get("status") else old
            return
        self.pods[pname] = pod
        self.gone.pop(pname, None)
        key = self.kind.pod_replica(pod)
        if key:
            self.pod_ids[pname] = replica_id(*key)
        self._ensure_followers(pod)

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
        """One line when the operator has shown no sign of life after a while: no
        status, no pod, no event about the job's objects, nothing it creates (§11.11)."""
        if self._told_no_status or self.job is None or self.pods or self.job.get("status"):
            return None
        waited = time.monotonic() - self._began
        if waited < self.no_status_after or self._acted:
            return None
        self._told_no_status = True  # asked once: the answer costs a request
        if stalls.operator_alive(self.conn, self.kind, self.name, self.job):
            return None
        return stalls.silent_operator(self.kind, self.name, self.conn.namespace, waited)

    def _give_up(self, st: JobStatus) -> None:
        """End a job a pod of which can never start (``stalls``): once, while it runs."""
        if self._gave_up or st.state.finished or self.job is None:
            return
        why = stalls.never_starts(self.kind, self.pods.values())
        if why is not None:
            self._gave_up = True
            stalls.give_up(self.conn, self.kind, self.name, why)

    def _fold(self) -> Iterator[JobEvent]:
        folded = 0.0
        while not self.stop.is_set():
            try:
                item: I.Item = self.q.get(timeout=0.2)
            except queue.Empty:
                item = I.Tick()
            silent = self._silent_operator()
            if silent:
                yield JobEvent(EventKind.WAITING, self.name, message=silent)
            yield from _HANDLERS[type(item)](self, item)
            # Folding the status costs a pass over every pod: do it when the job or a
            # pod changed, and on idle ticks, not for each of thousands of log lines;
            # a burst of pod changes (a hundred pods starting) folds once it is read.
            since = time.monotonic() - folded
            if isinstance(item, I.QUIET) and since < 0.25:
                continue
            if isinstance(item, I.PodChanged) and since < 0.1 and not self.q.empty():
                continue
            folded = time.monotonic()
            st = self._status()
            if st is None:
                if self._gone:
                    return
                continue
            yield from self._status_events(st)
            self._give_up(st)
            if (st.state.finished or self._gone) and self._finished_at is None:
                self._finished_at = time.monotonic()
            if (self._finished_at is not None and I.PodChanged in self._synced
                    and time.monotonic() - self._finished_at >= FINISH_SETTLE and self._drained()):  # fmt: skip
                st.metrics = dict(self._latest)
                yield JobEvent(EventKind.STATUS, self.name, status=st)
                return

    def _status_events(self, st: JobStatus) -> Iterator[JobEvent]:
        """REPLICA events for changed replicas, WAITING for new reasons, STATUS for a
        new state (the final one goes out after the logs)."""
        yield from replica_events(self.name, st.replicas, self._seen_replicas, _changed,
                                  before=self._with_last_lines, ready=self._lines_in)  # fmt: skip
        for r in st.replicas:
            if r.message != self._waiting.get(r.id):
                self._waiting[r.id] = r.message
                if r.message and (not r.state.finished or r.message.startswith("OOMKilled")):
                    yield JobEvent(EventKind.WAITING, self.name, replica=r.id, message=r.message)
        if S.back_to_pending(self.kind, self._last_state, st.state):
            return
        if st.state != self._last_state and not st.state.finished:
            self._last_state = st.state
            yield JobEvent(EventKind.STATUS, self.name, status=st)

    def _lines_in(self, r: ReplicaStatus) -> bool:
        """Whether a restarted or ended replica's ended containers have had their lines
        read, so its event carries the lines that say why (a container restarted at
        once is seen restarted before its log is read). Waits LINES_WAIT at most. A
        container that ended in a pod a sidecar keeps running counts as ended."""
        if not (_ended(r) or r.restarts) or r.pod is None:
            return True
        running = S.running_id(self.kind, self.pods.get(r.pod) or {})
        # a follower that ended may still have lines in the queue: it counts once its
        # FollowerDone, queued after them, was read
        if not any(
            f.rid == r.id and c != running and f not in self._read_out
            for c, f in self.followers.items()
        ):
            self._held.pop(r.id, None)
            return True
        return time.monotonic() - self._held.setdefault(r.id, time.monotonic()) > LINES_WAIT

    def _with_last_lines(self, r: ReplicaStatus) -> None:
        if _ended(r) or r.restarts:
            r.last_lines = list(self.last_lines.get(r.id, ()))

    # -- one handler per item --------------------------------------------------------
    def _on_job(self, item: I.JobChanged) -> Iterator[JobEvent]:
        self._gone = item.etype == "DELETED"
        self.job = item.obj if not self._gone else self.job
        if self._last_state is None and item.obj:
            for msg in S.job_warnings(item.obj):
                yield JobEvent(EventKind.WAITING, self.name, message=f"warning: {msg}")

    def _on_pod(self, item: I.PodChanged) -> Iterator[JobEvent]:
        self._pod_event(item.etype, item.obj)
        return iter(())

    def _on_event(self, item: I.EventSeen) -> Iterator[JobEvent]:
        involved = (item.obj.get("involvedObject") or {}).get("name", "")
        self._acted |= involved in self.kind.event_objects(self.name)  # its controllers work
        msg = self._concerns(item.obj)
        if msg:
            involved = (item.obj.get("involvedObject") or {}).get("name", "")
            yield JobEvent(EventKind.WAITING, self.name, replica=self.pod_ids.get(involved),
                           message=msg)  # fmt: skip

    def _on_synced(self, item: I.Synced) -> Iterator[JobEvent]:
        """A re-list is the whole truth: forget what it no longer holds."""
        self._synced.add(item.of)
        if item.of is I.PodChanged:
            for pname in [p for p in self.pods if p not in item.names]:
                self._pod_event("DELETED", self.pods[pname])
        if item.of is I.JobChanged and self.job is not None and self.name not in item.names:
            self._gone = True
        return iter(())

    def _on_refused(self, item: I.Refused) -> Iterator[JobEvent]:
        if item.of is I.JobChanged:  # without the job there is nothing to follow
            from jupyter_ddl.backends.kubernetes.api_errors import from_api_exception

            raise from_api_exception(item.error, action=f"watching {self.kind} {self.name}",
                                     kind=self.kind, name=self.name,
                                     namespace=self.conn.namespace)  # fmt: skip
        return iter(())  # no pods or events: the job's status still arrives

    def _on_lost(self, item: I.LostContact) -> Iterator[JobEvent]:
        yield JobEvent(EventKind.WAITING, self.name, message=item.message)

    def _on_lines(self, item: I.Lines) -> Iterator[JobEvent]:
        for ev in line_events(self.name, self._log_lines(item.rid, item.batch), self._log_event,
                              raw=self.raw):  # fmt: skip
            if ev.kind is EventKind.METRIC:
                self._latest.update(ev.metrics or {})
            yield ev

    def _on_log_failed(self, item: I.LogFailed) -> Iterator[JobEvent]:
        yield JobEvent(EventKind.WAITING, self.name, replica=item.rid, message=str(item.error))

    def _on_usage(self, item: I.Usage) -> Iterator[JobEvent]:
        if item.pod in self.pod_ids:
            yield JobEvent(EventKind.RESOURCE, self.name, replica=self.pod_ids[item.pod],
                           metrics=item.values)  # fmt: skip

    def _on_follower_done(self, item: I.FollowerDone) -> Iterator[JobEvent]:
        self._read_out.add(item.stream)
        return iter(())

    def _nothing(self, item: I.Item) -> Iterator[JobEvent]:
        return iter(())  # an idle tick: only the status fold runs

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
        seen = last_seen(ev)
        return seen is None or seen >= int(self.start_time)

    def _log_lines(self, rid: str, batch: I.Batch) -> Iterator[LogLine]:
        """The batch's lines, numbered per replica; the last lines kept for a failure's
        message; lines from before the watch began (``from_start=False``) dropped."""
        for stamp, text in batch:
            off = self.offsets.get(rid, 0)
            self.offsets[rid] = off + 1
            if not is_metric_line(text):
                self.last_lines.setdefault(rid, deque(maxlen=LAST_LINES)).append(text)
            if self.start_time is not None and stamp is not None and stamp < self.start_time:
                continue
            yield LogLine(rid, off, text, stamp)

    def _log_event(self, line: LogLine) -> JobEvent:
        return JobEvent(EventKind.LOG, self.name, replica=line.replica, log=line)


def _ended(r: ReplicaStatus) -> bool:
    """The replica's run is over: its pod ended, or its container did (exit code read)
    while another container, an injected sidecar, keeps the pod running."""
    return r.state.finished or r.exit_code is not None


def _changed(r: ReplicaStatus) -> Hashable:
    """What makes a REPLICA event (a new message is a WAITING event instead)."""
    return (r.state, r.restarts, r.exit_code)


_HANDLERS: dict[type, Callable[[JobWatcher, Any], Iterator[JobEvent]]] = {
    I.JobChanged: JobWatcher._on_job,
    I.PodChanged: JobWatcher._on_pod,
    I.EventSeen: JobWatcher._on_event,
    I.Synced: JobWatcher._on_synced,
    I.Refused: JobWatcher._on_refused,
    I.LostContact: JobWatcher._on_lost,
    I.Lines: JobWatcher._on_lines,
    I.LogFailed: JobWatcher._on_log_failed,
    I.Usage: JobWatcher._on_usage,
    I.FollowerDone: JobWatcher._on_follower_done,
    I.Tick: JobWatcher._nothing,
}
