"""Job objects and pods -> JobStatus / ReplicaStatus (pure, over camelCase dicts).

Kinds differ in how pods are labelled (operator-contract.md §1.4 v1 operators, §3.4
mpi-operator, §4.2 JobSet: ``Kind.pod_replica``), which container trains
(``Kind.container``: the kubelet sorts statuses by name, so a sidecar may come first,
§10.15) and how a job ends (§1.5, §3.4: ``Succeeded``/``Failed`` conditions; §4.4:
``Complete``/``Failed``, no Running condition, no start or completion time).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from jupyter_ddl._util import timestamps
from jupyter_ddl.backends.kubernetes.reasons import pod_waiting
from jupyter_ddl.core import failures
from jupyter_ddl.core.kinds import Kind
from jupyter_ddl.errors import DDLError
from jupyter_ddl.manifests import (
    ANNOTATION_CELL,
    ANNOTATION_CODE_DIGEST,
    ANNOTATION_NOTEBOOK,
    ANNOTATION_SPEC,
    LABEL_STRATEGY,
    PREFIX,
    trainingruntime,
)
from jupyter_ddl.models import JobSpec, JobState, JobStatus, ReplicaState, ReplicaStatus

ANNOTATION_CANCELLED = PREFIX + "cancelled"
#: on a job ended because a pod could never start: the reason (``stalls``)
ANNOTATION_GAVE_UP = PREFIX + "never-started"
ANNOTATION_WARNINGS = PREFIX + "warnings"
ANNOTATION_IMAGE = PREFIX + "image"  # {"reference": ..., "pushed": true|false|null}
Key = tuple[str, int]


def submitted_spec(obj: Mapping[str, Any]) -> JobSpec | None:
    """The spec a job of ours was submitted with (its annotation); None for others."""
    raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_SPEC)
    if not raw:
        return None
    try:
        return JobSpec.from_dict(json.loads(raw))
    except (ValueError, TypeError, KeyError, DDLError):
        return None  # written by another version: read the job object instead


def expected_replicas(kind: Kind, obj: Mapping[str, Any]) -> list[Key]:
    """The replicas the job has: its resolved shape when it is ours (a TrainJob's
    runtime decides its pods), else what the job object asks for."""
    spec = submitted_spec(obj)
    if spec is not None:
        try:
            return spec.shape.replica_ids
        except DDLError:
            pass
    return kind.expected_replicas(obj)


def container_status(kind: Kind, pod: Mapping[str, Any]) -> dict[str, Any] | None:
    """The status of the container that trains (the kind's container for the pod's
    role), else of the pod spec's first container; never a sidecar by position. The
    one place that decides which container of a pod is the replica's."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    key = kind.pod_replica(pod)
    containers = (pod.get("spec") or {}).get("containers") or []
    names = [kind.container(key[0])] if key else []
    names += [c.get("name") for c in containers[:1]]
    for name in names:
        found = next((cs for cs in statuses if cs.get("name") == name), None)
        if found is not None:
            return dict(found)
    return dict(statuses[0]) if len(statuses) == 1 else None


def replica_status(kind: Kind, role: str, index: int, pod: dict[str, Any] | None) -> ReplicaStatus:
    rs = ReplicaStatus(role=role, index=index)
    if pod is None:
        return rs
    rs.pod = pod["metadata"]["name"]
    st = pod.get("status") or {}
    phase = st.get("phase", "Pending")
    cs = container_status(kind, pod) or {}
    rs.restarts = int(cs.get("restartCount") or 0)
    state = cs.get("state") or {}
    # a failed pod, or one waiting to restart, ended its last run as lastState says
    term = state.get("terminated") or (
        (cs.get("lastState") or {}).get("terminated")
        if phase == "Failed" or state.get("waiting")
        else None
    )
    if term:
        rs.exit_code = term.get("exitCode")
        sig = term.get("signal")
        rs.signal = int(sig) if sig else None
    ended = term or (cs.get("lastState") or {}).get("terminated")
    if ended:  # the failure order the root cause is read from
        rs.ended = epoch(ended.get("finishedAt"))
    rs.message = pod_waiting(pod)
    if phase == "Succeeded":
        rs.state = ReplicaState.SUCCEEDED
    elif phase == "Failed":
        rs.state = ReplicaState.FAILED
        rs.message = rs.message or (term or {}).get("reason") or st.get("reason")
    elif phase == "Running":
        waiting = state.get("waiting")
        rs.state = ReplicaState.RESTARTING if waiting and rs.restarts else ReplicaState.RUNNING
    return rs


def _failed_run(
    kind: Kind, pod: dict[str, Any] | None, seen: Mapping[str, Mapping[str, Any]] | None = None
) -> Mapping[str, Any] | None:
    """The last run of a pod's container, when it ended badly (the pod waits to restart),
    else the failed run a watch saw earlier of this very pod (``seen``, by pod uid)."""
    if pod is None:
        return None
    cs = container_status(kind, pod) or {}
    last: Mapping[str, Any] | None = (cs.get("lastState") or {}).get("terminated")
    if last and (last.get("exitCode") or last.get("signal")):
        return last
    return (seen or {}).get((pod.get("metadata") or {}).get("uid") or "")


def own_failure(kind: Kind, pod: Mapping[str, Any]) -> dict[str, Any] | None:
    """The latest run of the replica's container that this pod object shows ended badly
    on its own (``terminated`` with an exit code or signal: the current state of a
    container about to restart, else ``lastState``), for a watch to remember. The pod's
    next states may no longer show it: a job past its backoff limit has every pod
    deleted before it is marked Failed, and a pod being torn down reports its killed
    run, or only a waiting container. A pod already being deleted gives nothing: what
    ends then was ended by the deletion, not a failure of its own."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return None
    cs = container_status(kind, dict(pod)) or {}
    for state in (cs.get("state"), cs.get("lastState")):
        term = (state or {}).get("terminated")
        if term and (term.get("exitCode") or term.get("signal")):
            return dict(term)
    return None


def epoch(ts: str | None) -> float | None:
    """Epoch seconds of an RFC 3339 time, with its fraction when it has one."""
    return timestamps.parse(ts) if ts else None


def _true(conds: list[dict[str, Any]], ctype: str) -> dict[str, Any] | None:
    return next((c for c in conds if c.get("type") == ctype and c.get("status") == "True"), None)


#: conditions that end a job: v1 operators and mpi-operator (§1.5, §3.4), Trainer (§4.4)
TERMINAL = (
    ("Succeeded", JobState.SUCCEEDED),
    ("Complete", JobState.SUCCEEDED),
    ("Failed", JobState.FAILED),
)


def job_state(obj: Mapping[str, Any], replicas: list[ReplicaStatus]) -> tuple[JobState, str | None]:
    status = obj.get("status") or {}
    conds = status.get("conditions") or []
    notes = (obj.get("metadata") or {}).get("annotations") or {}
    for ctype, state in TERMINAL:
        c = _true(conds, ctype)
        if c:
            return state, c.get("message")
    if notes.get(ANNOTATION_GAVE_UP):  # a pod that could never start (``stalls``)
        return JobState.FAILED, notes[ANNOTATION_GAVE_UP]
    if notes.get(ANNOTATION_CANCELLED) == "true":
        return JobState.CANCELLED, "cancelled"
    last = next((c for c in reversed(conds) if c.get("status") == "True"), None)
    if last and last["type"] == "Restarting":
        return JobState.RESTARTING, last.get("message")
    if last and last["type"] == "Running":
        return JobState.RUNNING, last.get("message")
    if last and last["type"] == "Suspended":
        return JobState.PENDING, last.get("message")
    if replicas and all(
        r.state in (ReplicaState.RUNNING, ReplicaState.SUCCEEDED, ReplicaState.RESTARTING)
        for r in replicas
    ):
        # TrainJob has no Running condition (§4.4); a replica restarting in place
        # (OnFailure, JobSet's default) is the job still running, not pending again
        return JobState.RUNNING, None
    if last and last["type"] == "Created":
        return JobState.CREATED, last.get("message")
    return JobState.PENDING, None


def times(obj: Mapping[str, Any], pods: list[dict[str, Any]]) -> tuple[float | None, float | None]:
    """(started, finished): the operator's ``startTime``/``completionTime`` where it
    writes them; else (a TrainJob, §4.4) the first pod's start and the time the
    terminal condition became true."""
    st = obj.get("status") or {}
    started, finished = epoch(st.get("startTime")), epoch(st.get("completionTime"))
    if started is None:
        starts = [t for p in pods if (t := epoch((p.get("status") or {}).get("startTime")))]
        started = min(starts) if starts else None
    if finished is None:
        conds = st.get("conditions") or []
        for ctype, _ in TERMINAL:
            c = _true(conds, ctype)
            if c:
                finished = epoch(c.get("lastTransitionTime") or c.get("lastUpdateTime"))
                break
    if started is not None and finished is not None:
        started = min(started, finished)
    return started, finished


def job_status(
    kind: Kind,
    obj: dict[str, Any],
    pods: list[dict[str, Any]],
    namespace: str | None = None,
    gone: Sequence[dict[str, Any]] = (),
    last_lines: Mapping[str, Sequence[str]] | None = None,
    seen_failures: Mapping[str, Mapping[str, Any]] | None = None,
) -> JobStatus:
    """The JobStatus of a job object and the pods found with ``kind.pod_selector``.
    ``gone``: the last state of pods deleted as the job ended (cleanPodPolicy, a
    finished JobSet deleting its Jobs), so the replicas they were stay in the table.
    ``last_lines`` (replica id -> its last log lines, from a watch) lets a failure's
    message name the exception of its root cause. ``seen_failures`` (pod uid -> the failed
    run a watch saw, ``own_failure``) keeps a replica that failed failed when its pod's
    last state no longer shows that run."""
    md = obj.get("metadata") or {}
    by_id: dict[Key, dict[str, Any]] = {}
    ended: set[Key] = set()
    deleting: set[Key] = set()  # pods still listed while the kubelet stops them
    for p in gone:
        key = kind.pod_replica(p)
        if key:
            by_id[key] = p
            ended.add(key)
    for p in pods:
        key = kind.pod_replica(p)
        if key:
            by_id[key] = p
            ended.discard(key)
            if (p.get("metadata") or {}).get("deletionTimestamp"):
                deleting.add(key)
    keys = expected_replicas(kind, obj)
    keys += [k for k in by_id if k not in keys]
    replicas = [replica_status(kind, r, i, by_id.get((r, i))) for r, i in keys]
    ranks = _ranks(obj)
    for r in replicas:
        r.rank = ranks.get((r.role, r.index))
        r.last_lines = list((last_lines or {}).get(r.id, ()))
    state, message = job_state(obj, replicas)
    for r in replicas:
        stopped = state == JobState.CANCELLED or (r.role, r.index) in ended
        # a pod the job's end is deleting was stopped by it, whatever its phase says yet
        stopped |= state.finished and (r.role, r.index) in deleting
        # a replica that crashed and restarted in a job that failed (its backoff limit
        # reached, whatever state its last run was caught in, even killed by the job's
        # end) failed: the root cause is read from it. So did one still in its first
        # back-off: the kubelet counts a restart only when the next container starts,
        # and the operator may end the job on another replica's restart first
        last = _failed_run(kind, by_id.get((r.role, r.index)), seen_failures)
        if state == JobState.FAILED and (r.restarts or last) and not r.state.finished:
            r.state = ReplicaState.FAILED
            if last:
                r.exit_code = last.get("exitCode")
                r.signal = int(last["signal"]) if last.get("signal") else None
                # when it failed, not when the job's end stopped its next run: the
                # root cause is the replica that failed first
                r.ended = epoch(last.get("finishedAt")) or r.ended
        elif stopped and not r.state.finished:
            r.state = ReplicaState.TERMINATED
        elif state.finished and r.pod is None and not r.state.finished:
            # never seen: its pod came and went before anyone looked (a finished JobSet
            # deletes its node Jobs); "Pending" under a finished job would be a lie
            r.state = ReplicaState.TERMINATED
            r.message = r.message or "its pod was deleted when the job ended, before it was read"
    if state == JobState.FAILED:
        found = failures.diagnose(failures.outcomes(replicas))
        if found.root is not None:  # the root cause first, then the operator's reason
            message = found.line + (f" — {message}" if message else "")
    notes = md.get("annotations") or {}
    started, finished = times(obj, pods)
    image = _json_notes(notes, ANNOTATION_IMAGE, dict)
    return JobStatus(
        name=md.get("name", ""),
        backend="kubernetes",
        strategy=(md.get("labels") or {}).get(LABEL_STRATEGY, ""),
        state=state,
        replicas=replicas,
        message=message,
        created=epoch(md.get("creationTimestamp")),
        started=started,
        finished=finished,
        namespace=md.get("namespace") or namespace,
        notebook=notes.get(ANNOTATION_NOTEBOOK),
        code_digest=notes.get(ANNOTATION_CODE_DIGEST),
        cell_id=notes.get(ANNOTATION_CELL),
        backoff_limit=_backoff_limit(obj),
        image=image.get("reference"),
        image_pushed=image.get("pushed"),
        warnings=_json_notes(notes, ANNOTATION_WARNINGS, list),
    )


def job_warnings(obj: Mapping[str, Any]) -> list[str]:
    """The warnings submit left on the job (a mangled annotation reads as none)."""
    md = obj.get("metadata") or {}
    return [str(w) for w in _json_notes(md.get("annotations") or {}, ANNOTATION_WARNINGS, list)]


def _json_notes(notes: Mapping[str, str], key: str, kind: type) -> Any:
    """Annotation ``key`` as JSON of type ``kind``; empty when absent or mangled."""
    try:
        value = json.loads(notes.get(key) or "null")
    except ValueError:
        value = None
    return value if isinstance(value, kind) else kind()


def _ranks(obj: Mapping[str, Any]) -> dict[Key, int]:
    """(role, index) -> node rank, from the shape of the spec the job was submitted
    with (none for a job that is not ours)."""
    spec = submitted_spec(obj)
    if spec is None:
        return {}
    try:
        return {(r.role, r.index): r.rank for r in spec.shape.replicas if r.rank is not None}
    except DDLError:
        return {}


def _backoff_limit(obj: Mapping[str, Any]) -> int | None:
    """runPolicy.backoffLimit of a Kubeflow v1 job or MPIJob; for a TrainJob the
    limit its Jobs run under (its own runtime's, else the Job controller's default:
    operator-contract.md §11.4, §11.8), so a restart is shown as n of that limit."""
    if obj.get("kind") == "TrainJob":
        spec = submitted_spec(obj)
        if spec is None:
            return trainingruntime.JOB_DEFAULT_BACKOFF_LIMIT
        return trainingruntime.backoff_limit(spec)
    limit = ((obj.get("spec") or {}).get("runPolicy") or {}).get("backoffLimit")
    return int(limit) if isinstance(limit, int) else None


def container_ids(kind: Kind, pod: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(container ID, container name, is current) of the replica's container
    (``status.container_status``): its earlier run (``lastState``) and its current run
    once it has started."""
    cs = container_status(kind, pod)
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


def running_id(kind: Kind, pod: dict[str, Any]) -> str | None:
    """The ID of the replica's container if it runs now, else None."""
    cs = container_status(kind, pod) or {}
    return cs.get("containerID") if "running" in (cs.get("state") or {}) else None


def runs(kind: Kind, pod: dict[str, Any], cid: str | None) -> bool:
    """Whether container ``cid`` is the pod's current one and runs."""
    return cid is not None and running_id(kind, pod) == cid


def may_restart(pod: dict[str, Any]) -> bool:
    """Whether the pod's containers can run again (a log stream opened by container
    name may then be a later container's)."""
    return ((pod.get("spec") or {}).get("restartPolicy") or "Always") != "Never"


def back_to_pending(kind: Kind, last: JobState | None, now: JobState) -> bool:
    """A TrainJob is Running only by its pods (it has no Running condition, §4.4): a
    pod between two starts, or deleted as its Job fails just before the TrainJob says
    so, would flip it back to Pending. Once running it stays running until it ends (a
    suspended TrainJob is reported cancelled, not pending)."""
    return (
        kind.name == "TrainJob"
        and last in (JobState.RUNNING, JobState.RESTARTING)
        and now in (JobState.PENDING, JobState.CREATED)
    )


def job_over(job: Mapping[str, Any] | None) -> bool:
    """Whether the job object says it ended (a terminal condition, or we gave up on it)."""
    conds = ((job or {}).get("status") or {}).get("conditions") or []
    notes = ((job or {}).get("metadata") or {}).get("annotations") or {}
    return ANNOTATION_GAVE_UP in notes or any(
        c.get("type") in {t for t, _ in TERMINAL} and c.get("status") == "True" for c in conds
    )
