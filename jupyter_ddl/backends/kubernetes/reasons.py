"""Why a pod waits, in words a user can act on (pure, over camelCase pod/event dicts).

FailedScheduling (e.g. ``Insufficient nvidia.com/gpu``), ImagePullBackOff/ErrImagePull,
CrashLoopBackOff, OOMKilled, and a gang PodGroup that is not satisfied each become one
WAITING message with the next step.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from jupyter_ddl._util import timestamps

_PULL = ("ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull")
_CONFIG = ("CreateContainerConfigError", "CreateContainerError")

#: event reasons worth showing (Warning events about our pods, PodGroup and job)
EVENT_REASONS = {
    "FailedScheduling",
    "Unschedulable",  # volcano PodGroup
    "NotEnoughResources",
    "FailedMount",
    "Failed",  # kubelet: image pull / start failures
    "BackOff",
    "ValidationError",  # mpi-operator refuses the job (operator-contract.md §3.1)
    "FailedCreate",
    "Evicted",
    "OOMKilling",
}


def _hint_for_schedule(message: str) -> str:
    if "nvidia.com/gpu" in message or "gpu" in message.lower():
        return "not enough free GPUs: ask for fewer, wait for others to finish, or add GPU nodes"
    if "Insufficient cpu" in message or "Insufficient memory" in message:
        return "not enough free CPU/memory: lower the job's requests"
    if "taint" in message or "node affinity" in message or "selector" in message:
        return "no node matches the job's node selector/tolerations"
    if "persistentvolumeclaim" in message.lower():
        return "a PVC the job mounts is missing or not bound"
    return "the scheduler cannot place the pod yet"


def pod_waiting(pod: dict[str, Any]) -> str | None:
    """One line saying why this pod is not running, or None."""
    status = pod.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            msg = cond.get("message") or cond.get("reason") or "unschedulable"
            return f"FailedScheduling: {msg} ({_hint_for_schedule(msg)})"
    init = init_waiting(status)
    if init:
        return init
    for cs in status.get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        reason = waiting.get("reason")
        last = (cs.get("lastState") or {}).get("terminated") or {}
        if reason in _PULL:
            return f"{reason}: {waiting.get('message') or 'the image cannot be pulled'} (check the image name and the registry's pull secret)"
        if reason == "CrashLoopBackOff":
            why = f"last exit code {last.get('exitCode')}" + (
                f", {last['reason']}" if last.get("reason") else ""
            )
            if last.get("reason") == "OOMKilled":
                return f"OOMKilled: the container ran out of memory ({why}); raise the memory limit"
            return f"CrashLoopBackOff: the container keeps crashing ({why}); see its last lines"
        if reason in _CONFIG:
            return f"{reason}: {waiting.get('message') or ''} (a ConfigMap/Secret the pod needs is missing?)".replace(
                ":  (", ": ("
            )
        terminated = (cs.get("state") or {}).get("terminated") or {}
        if terminated.get("reason") == "OOMKilled":
            return "OOMKilled: the container ran out of memory; raise the memory limit"
    return None


def init_waiting(status: dict[str, Any]) -> str | None:
    """Why an init container holds the pod back (``Init:`` in kubectl), or None.

    training-operator gives every PyTorchJob worker an ``init-pytorch`` container
    (``alpine``, polling DNS for the master) that runs before ours; while it cannot
    pull or keeps failing, our container only says ``PodInitializing``, and the
    operator never counts the worker against the backoff (operator-contract.md §11.5)."""
    for cs in status.get("initContainerStatuses") or []:
        name = cs.get("name") or "?"
        state = cs.get("state") or {}
        waiting = state.get("waiting") or {}
        reason = waiting.get("reason")
        last = (state.get("terminated") or (cs.get("lastState") or {}).get("terminated")) or {}
        if reason in _PULL:
            msg = waiting.get("message") or "the image cannot be pulled"
            return (f"Init:{reason}: init container {name}: {msg} (the cluster cannot pull "
                    "it: check the image, the registry's pull secret, or a mirror)")  # fmt: skip
        if reason == "CrashLoopBackOff" or (last.get("exitCode") or 0) != 0:
            code = last.get("exitCode")
            what = "CrashLoopBackOff" if reason == "CrashLoopBackOff" else "Error"
            return (f"Init:{what}: init container {name} failed (exit code {code}, "
                    f"restart {int(cs.get('restartCount') or 0)}); see its log with "
                    f"`kubectl logs <pod> -c {name}`")  # fmt: skip
        if reason in _CONFIG:
            detail = waiting.get("message") or "its configuration cannot be made"
            return f"Init:{reason}: init container {name}: {detail}"
    return None


def event_waiting(event: dict[str, Any], refusals: Collection[str] = ()) -> str | None:
    """A Warning event about our objects as one line, or None when it is noise.
    ``refusals``: the reasons by which the job's operator says the API server refused
    a pod it made (operator-contract.md §10.18); their message is the server's."""
    reason = event.get("reason") or ""
    if event.get("type") != "Warning" or reason not in EVENT_REASONS | set(refusals):
        return None
    msg = " ".join((event.get("message") or "").split())
    obj = event.get("involvedObject") or {}
    what = f"{(obj.get('kind') or '').lower()} {obj.get('name', '')}".strip()
    if reason in refusals:
        return (
            f"{reason} ({what}): the cluster refused a pod: {msg} "
            "(quota or admission policy: free the quota or change the job as it asks)"
        )
    if reason == "FailedScheduling":
        return f"FailedScheduling ({what}): {msg} ({_hint_for_schedule(msg)})"
    if obj.get("kind") == "PodGroup" or "gang" in msg or "PodGroup" in msg:
        return f"gang scheduling not satisfied ({what}): {msg} (all replicas must fit at once: free resources or lower minAvailable)"
    if reason == "ValidationError":
        return f"the operator refused the job: {msg}"
    return f"{reason} ({what}): {msg}"


def podgroup_waiting(pg: dict[str, Any]) -> str | None:
    """A PodGroup (volcano or scheduler-plugins) still pending, as one line."""
    status = pg.get("status") or {}
    phase = status.get("phase")
    if phase not in ("Pending", "Inqueue", "Scheduling", None):
        return None
    min_member = (pg.get("spec") or {}).get("minMember")
    scheduled = status.get("scheduled") or status.get("running") or 0
    conds = [
        c
        for c in status.get("conditions") or []
        if c.get("status") == "True" and c.get("type") == "Unschedulable"
    ]
    detail = conds[-1].get("message") if conds else f"{scheduled}/{min_member} replicas placed"
    return f"gang scheduling not satisfied: PodGroup {pg.get('metadata', {}).get('name')} is {phase or 'Pending'} ({detail})"


def last_seen(ev: dict[str, Any]) -> float | None:
    """When an event last happened. An event written through events.k8s.io (the
    scheduler's FailedScheduling) keeps ``eventTime`` at its first occurrence and moves
    ``series.lastObservedTime`` (kubernetes ``staging/src/k8s.io/client-go/tools/events``),
    so a series still going on is judged by that, not by its start."""
    series = (ev.get("series") or {}).get("lastObservedTime")
    for ts in (series, ev.get("lastTimestamp"), ev.get("eventTime")):
        t = timestamps.parse(ts) if ts else None
        if t is not None:
            return t
    return None
