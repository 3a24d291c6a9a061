"""Pod status shapes as the kubelet reports them (pure).

``containerStatuses`` holds one entry per container of the pod, **sorted by container
name**: the kubelet sorts them before reporting (``pkg/kubelet/kubelet_pods.go``,
``convertToAPIContainerStatuses``: ``sort.Sort(kubetypes.SortedContainerStatuses(…))``,
whose ``Less`` compares ``Name``), so an injected ``istio-proxy`` comes before
``pytorch`` or ``tensorflow``.
"""

from __future__ import annotations

from typing import Any

from .store import now_iso


def conditions(
    scheduled: bool, ready: bool, reason: str = "", msg: str = ""
) -> list[dict[str, Any]]:
    sched: dict[str, Any] = {"type": "PodScheduled", "status": "True" if scheduled else "False"}
    if not scheduled:
        sched.update(reason=reason or "Unschedulable", message=msg)
    return [sched, {"type": "Ready", "status": "True" if ready else "False"}]


def unschedulable(msg: str) -> dict[str, Any]:
    return {"phase": "Pending", "conditions": conditions(False, False, "Unschedulable", msg)}


def waiting(name: str, reason: str, msg: str = "") -> dict[str, Any]:
    state: dict[str, Any] = {"waiting": {"reason": reason}}
    if msg:
        state["waiting"]["message"] = msg
    return {"name": name, "state": state, "ready": False, "restartCount": 0}


def running(
    name: str, cid: str, restarts: int = 0, last: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {"name": name, "containerID": cid, "ready": True, "restartCount": restarts, "started": True,
            "state": {"running": {"startedAt": now_iso()}},
            "lastState": {"terminated": last} if last else {}}  # fmt: skip


def crashloop(name: str, restarts: int, term: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "ready": False, "restartCount": restarts, "containerID": term["containerID"],
            "state": {"waiting": {"reason": "CrashLoopBackOff",
                                  "message": f"back-off restarting failed container {name}"}},
            "lastState": {"terminated": term}}  # fmt: skip


def terminated(
    name: str, restarts: int, term: dict[str, Any], last: dict[str, Any] | None
) -> dict[str, Any]:
    return {"name": name, "ready": False, "restartCount": restarts, "containerID": term["containerID"],
            "state": {"terminated": term}, "lastState": {"terminated": last} if last else {}}  # fmt: skip


def termination(code: int, cid: str, reason: str | None = None) -> dict[str, Any]:
    code = code if code >= 0 else 128 - code  # a signal n reads as 128 + n
    return {"exitCode": code, "reason": reason or ("Completed" if code == 0 else "Error"),
            "containerID": cid, "startedAt": now_iso(), "finishedAt": now_iso()}  # fmt: skip


def pod(phase: str, statuses: list[dict[str, Any]], *, ready: bool = False,
        started: bool = False) -> dict[str, Any]:  # fmt: skip
    out: dict[str, Any] = {"phase": phase, "conditions": conditions(True, ready),
                           "containerStatuses": sorted(statuses, key=lambda c: c["name"])}  # fmt: skip
    if started:
        out["startTime"] = now_iso()
    return out
