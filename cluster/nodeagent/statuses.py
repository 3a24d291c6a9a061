"""The shapes of a pod's status as the kubelet writes them: a container's terminated
and waiting states, its image ID, the pod phase and conditions computed from its
containers (pure functions).
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


def image_id(image: str, repo_digest: str | None) -> str:
    """containerStatuses[].imageID: the kubelet reports the runtime's image reference
    (kuberuntime_container.go: `ImageID: status.ImageRef`), which containerd gives as
    the repo digest, `host/repo@sha256:...`, of what was pulled. The stand-in pulls
    nothing: it says so, `stand-in://IMAGE`, rather than a digest no registry holds."""
    if repo_digest:
        return repo_digest
    return f"stand-in://{image}" if image else ""


def waiting(name: str, reason: str, image: str = "") -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
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


def pod_status(
    policy: str,
    mains: list[dict[str, Any]],
    inits: list[dict[str, Any]],
    failed: bool,
    started_at: str,
) -> dict[str, Any]:
    """The pod's phase and conditions: ContainersReady and Ready when every container
    is ready (its probes: probes.py), Initialized once every init container succeeded."""
    ready = str(bool(mains) and all(s.get("ready") for s in mains))
    initialized = all(
        "terminated" in s["state"] and s["state"]["terminated"]["exitCode"] == 0 for s in inits
    )
    status: dict[str, Any] = {
        "phase": pod_phase(policy, mains, failed),
        "hostIP": "127.0.0.1",
        "startTime": started_at,
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Initialized", "status": str(initialized)},
            {"type": "ContainersReady", "status": ready},
            {"type": "Ready", "status": ready},
        ],
        "containerStatuses": mains,
    }
    if inits:
        status["initContainerStatuses"] = inits
    return status
