"""The shapes of a pod's status as the kubelet writes them: a container's terminated
and waiting states, and the pod phase computed from its containers (pure functions).
"""

from __future__ import annotations

import time
from typing import Any


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def terminated(
    code: int, reason: str, started: str, cid: str, message: str | None = None
) -> dict[str, Any]:
    term = {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now()}
    return {**term, "containerID": cid, **({"message": message} if message else {})}


def waiting(name: str, reason: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": "",
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        "started": False,
        "state": {"waiting": {"reason": reason}},
    }


def pod_phase(policy: str, mains: list[dict[str, Any]], init_failed: bool) -> str:
    """The pod phase from its containers' states, as the kubelet computes it."""
    if init_failed:
        return "Failed"
    states = [s["state"] for s in mains]
    if any("running" in s for s in states):
        return "Running"
    if states and all("terminated" in s for s in states):
        codes = [s["terminated"]["exitCode"] for s in states]
        if policy == "Never" or (policy == "OnFailure" and all(c == 0 for c in codes)):
            return "Succeeded" if all(c == 0 for c in codes) else "Failed"
        return "Running"
    if any(s.get("waiting", {}).get("reason") == "CrashLoopBackOff" for s in states):
        return "Running"
    return "Pending"
