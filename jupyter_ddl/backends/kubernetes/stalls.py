"""Waits that never end, and when jupyter-ddl ends them itself (pure functions).

Two states leave a job with no end that any operator would write
(operator-contract.md §11.9):

- an MPIJob worker that cannot start before the launcher exists: mpi-operator makes
  the launcher only once every worker is Ready and fails the MPIJob for a failed
  worker only when it was evicted, so the job waits forever;
- a pod held by an init container that can never succeed (its image cannot be pulled,
  or it keeps failing): the pod stays Pending, and training-operator counts only
  Running pods against the backoff limit.

``never_starts`` names such a pod and why, in one line; the watcher then marks the job
failed with that line (``ANNOTATION_GAVE_UP``) and suspends it, so its pods go away and
the job reads Failed for anyone who looks later.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from jupyter_ddl._util import timestamps
from jupyter_ddl.backends.kubernetes.connection import Connection
from jupyter_ddl.backends.kubernetes.status import (
    ANNOTATION_GAVE_UP,
    container_status,
    submitted_spec,
)
from jupyter_ddl.core.kinds import Kind
from jupyter_ddl.core.shape import TRAINER_RELEASE_OPTION
from jupyter_ddl.errors import DDLError
from jupyter_ddl.models import replica_id

log = logging.getLogger(__name__)

#: the container runtime could not run the command (containerd's ``StartError``,
#: dockershim's ``ContainerCannotRun``), or the kubelet could not create the container
START_ERRORS = frozenset(
    {"StartError", "ContainerCannotRun", "RunContainerError", "CreateContainerError"}
)
PULL_ERRORS = frozenset({"ImagePullBackOff", "ErrImagePull", "InvalidImageName"})
#: failed runs of a container that never became ready before it is judged unable to start
FAILED_STARTS = 3
#: seconds a pod may wait for an init container's image (the kubelet's pull back-off
#: reaches its 5 min cap by then; a registry outage shorter than this is waited out)
PULL_WAIT = 300.0


def never_starts(
    kind: Kind, pods: Iterable[Mapping[str, Any]], now: float | None = None
) -> str | None:
    """One line naming a pod of the job that can never start, or None."""
    now = time.time() if now is None else now
    pods = list(pods)
    launcher = kind.name == "MPIJob" and any(_role(kind, p) == "Launcher" for p in pods)
    for pod in pods:
        key = kind.pod_replica(pod)
        rid = replica_id(*key) if key else pod["metadata"]["name"]
        why = _init_stuck(pod, now)
        if why is None and kind.name == "MPIJob" and not launcher and _role(kind, pod) == "Worker":
            why = _cannot_start(kind, pod)
            if why is not None:
                why += (
                    "; mpi-operator creates the launcher only once every worker is Ready, "
                    "so the job would wait forever"
                )
        if why is not None:
            return f"{rid} can never start: {why}"
    return None


def _role(kind: Kind, pod: Mapping[str, Any]) -> str | None:
    key = kind.pod_replica(pod)
    return key[0] if key else None


def _init_stuck(pod: Mapping[str, Any], now: float) -> str | None:
    st = pod.get("status") or {}
    if st.get("phase", "Pending") != "Pending":
        return None
    images = {
        c.get("name"): c.get("image", "")
        for c in (pod.get("spec") or {}).get("initContainers") or []
    }
    stamp = (pod.get("metadata") or {}).get("creationTimestamp")
    created = timestamps.parse(stamp) if stamp else None
    for cs in st.get("initContainerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        reason, name = waiting.get("reason"), cs.get("name")
        if reason in PULL_ERRORS and created is not None and now - created >= PULL_WAIT:
            return (
                f"init container {name} cannot pull {images.get(name) or cs.get('image')} "
                f"({reason}) after {int((now - created) // 60)} min; make the image pullable "
                "from the cluster (a mirror, an image pull secret)"
            )
        if int(cs.get("restartCount") or 0) >= FAILED_STARTS:
            last = (cs.get("lastState") or {}).get("terminated") or {}
            if last.get("exitCode") not in (None, 0):
                return (
                    f"init container {name} failed {cs['restartCount']} times "
                    f"(exit code {last['exitCode']}, {last.get('reason') or 'Error'}); "
                    f"see `kubectl logs {pod['metadata']['name']} -c {name}`"
                )
    return None


def _cannot_start(kind: Kind, pod: Mapping[str, Any]) -> str | None:
    st = pod.get("status") or {}
    ours = container_status(kind, pod)
    if ours is None:
        return None
    state = ours.get("state") or {}
    term = state.get("terminated") or (ours.get("lastState") or {}).get("terminated") or {}
    waiting = (state.get("waiting") or {}).get("reason")
    failed_start = term.get("reason") in START_ERRORS or waiting in START_ERRORS
    detail = _detail(term, waiting)
    if st.get("phase") == "Failed":  # nobody makes the worker again
        return f"its container failed ({detail})"
    if failed_start and int(ours.get("restartCount") or 0) >= 1:
        return f"its container cannot start ({detail})"
    if waiting == "CrashLoopBackOff" and int(ours.get("restartCount") or 0) >= FAILED_STARTS:
        return f"its container keeps failing ({detail})"
    return None


def _detail(term: Mapping[str, Any], waiting: str | None) -> str:
    parts = [str(term.get("reason") or waiting or "Error")]
    if term.get("exitCode") is not None:
        parts.append(f"exit code {term['exitCode']}")
    msg = str(term.get("message") or "").strip().splitlines()
    if msg:
        parts.append(msg[-1][-200:])  # the runtime's words end with the cause
    return ", ".join(parts)


def silent_operator(kind: Kind, name: str, namespace: str, waited: float) -> str:
    """The line for a job that has neither a status nor a pod after ``waited`` s."""
    return (
        f"{kind} {name} has no status and no pod after {waited:.0f} s: "
        f"is {kind.operator} running, and watching namespace {namespace}?"
    )


#: what an operator creates first for a job, when that is not a pod: Trainer makes a
#: JobSet named after the TrainJob (group, version, plural)
CREATES = {"TrainJob": ("jobset.x-k8s.io", "v1alpha2", "jobsets")}
#: Trainer releases that write no TrainJob status before its end (v2.0: nothing sets
#: ``status.jobsStatus``; v2.1 on do), where a missing status proves nothing
LATE_STATUS = ("v2.0",)


def operator_alive(conn: Connection, kind: Kind, name: str, job: Mapping[str, Any]) -> bool:
    """Whether the operator has visibly acted on a job that has no status and no pod:
    the object it creates first exists, or (where that cannot be read) its release
    writes no status before the end, so silence is no sign."""
    from kubernetes.client import ApiException

    where = CREATES.get(kind.name)
    if where is None:
        return False
    try:
        conn.client("CustomObjectsApi").get_namespaced_custom_object(
            *where[:2], conn.namespace, where[2], name
        )
        return True
    except ApiException as e:
        if e.status == 404:
            return False
    spec = submitted_spec(job)
    release = str(spec.backend_options.get(TRAINER_RELEASE_OPTION, "")) if spec else ""
    return release.startswith(LATE_STATUS)


def give_up(conn: Connection, kind: Kind, name: str, why: str) -> None:
    """Mark the job failed with ``why`` and suspend it, so its pods go (a job that
    cannot be suspended keeps running; the mark still ends it for the user)."""
    from jupyter_ddl.backends.kubernetes.objects import CustomObjects

    patch = {"metadata": {"annotations": {ANNOTATION_GAVE_UP: why}}}
    objects = CustomObjects(conn, kind)
    try:
        objects.patch(name, {**patch, "spec": kind.suspend_patch()}, f"ending {name}")
    except DDLError:
        try:  # a kind that refuses suspend: the mark alone
            objects.patch(name, patch, f"ending {name}")
        except DDLError as e:
            log.warning("could not mark %s failed (%s): %s", name, why, e)
