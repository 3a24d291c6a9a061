"""How each operator judges a job from its pods, and how it writes the job's status
(operator-contract.md §1.5, §1.6, §3.4, §4.4). Pure apart from the store write in
``write_status``.

Fidelity notes, each from the operators' source: the backoff check counts the
restarts of *Running* pods of replicas whose policy restarts them and fails the job
when the sum **reaches** ``backoffLimit`` (training-operator ``pkg/core/job.go``
``PastBackoffLimit``: ``result >= limit``, and ``result > 0`` for a limit of 0); a
TrainJob's status has ``conditions`` and ``jobsStatus`` only (no start or completion
time: Trainer v2 ``trainjob_types.go``) and no Created/Running condition.
"""

from __future__ import annotations

import copy
from typing import Any

from .envs import REPLICA_MAPS
from .resources import Resource
from .store import Store, now_iso

RESTARTING_POLICIES = ("OnFailure", "Always", "ExitCode")


def phase(p: dict[str, Any]) -> str:
    return (p.get("status") or {}).get("phase", "Pending")


def past_backoff_limit(job: dict[str, Any], kind: str, pods_by_type: dict[str, list[dict[str, Any]]],
                       policy_of: dict[str, str]) -> bool:  # fmt: skip
    limit = ((job.get("spec") or {}).get("runPolicy") or {}).get("backoffLimit")
    if limit is None:
        return False
    restarts = 0
    for rtype, pods in pods_by_type.items():
        if policy_of.get(rtype) not in RESTARTING_POLICIES:
            continue
        for p in pods:
            if phase(p) != "Running":
                continue
            st = p.get("status") or {}
            restarts += sum(int(cs.get("restartCount") or 0)
                            for cs in (st.get("containerStatuses") or []) + (st.get("initContainerStatuses") or []))  # fmt: skip
    return restarts > 0 if int(limit) == 0 else restarts >= int(limit)


def exceeds_backoff_limit(job: dict[str, Any], pods_by_type: dict[str, list[dict[str, Any]]],
                          counts: dict[str, int]) -> bool:  # fmt: skip
    """training-operator's other check (v1.9 ``pkg/controller.v1/common/job.go``
    ReconcileJobs, ``exceedsBackoffLimit``): a pod newly Failed (more than the job's
    status counts) while not every replica is active, when the job's requeues so far
    plus one exceed the limit. The double never requeues a job on an error, so that is
    a limit of 0: under ``Never`` or ``ExitCode`` the first failed pod passes it."""
    limit = ((job.get("spec") or {}).get("runPolicy") or {}).get("backoffLimit")
    if limit is None:
        return False
    pods = [p for ps in pods_by_type.values() for p in ps]
    failed = sum(phase(p) == "Failed" for p in pods)
    known = sum(int(r.get("failed") or 0)
                for r in ((job.get("status") or {}).get("replicaStatuses") or {}).values())  # fmt: skip
    active = sum(phase(p) not in ("Succeeded", "Failed") and not p["metadata"].get("deletionTimestamp")
                 for p in pods)  # fmt: skip
    requeues = 0
    return failed > known and active != sum(counts.values()) and requeues + 1 > int(limit)


def over_backoff_limit(kind: str, job: dict[str, Any], pods_by_type: dict[str, list[dict[str, Any]]],
                       counts: dict[str, int], policy_of: dict[str, str]) -> bool:  # fmt: skip
    """Whether training-operator fails the job at its backoff limit (mpi-operator has
    checks of its own: ``judge_v1`` reads only its launcher)."""
    return kind != "MPIJob" and (
        past_backoff_limit(job, kind, pods_by_type, policy_of)
        or exceeds_backoff_limit(job, pods_by_type, counts)
    )


def judge_v1(kind: str, job: dict[str, Any], pods_by_type: dict[str, list[dict[str, Any]]],
             counts: dict[str, int], policy_of: dict[str, str]) -> tuple[str, str]:  # fmt: skip
    """(condition type, message) for TFJob, PyTorchJob and MPIJob."""
    name = job["metadata"]["name"]
    all_pods = [p for ps in pods_by_type.values() for p in ps]
    if over_backoff_limit(kind, job, pods_by_type, counts, policy_of) or (
        kind == "MPIJob" and past_backoff_limit(job, kind, pods_by_type, policy_of)
    ):
        # training-operator names no kind here (pkg/controller.v1/common/job.go: "Job %s
        # has failed because ..."), seen on the real tier
        return (
            "Failed",
            f"Job {name} has failed because it has reached the specified backoff limit",
        )
    failed = [rt for rt, ps in pods_by_type.items() if any(phase(p) == "Failed" for p in ps)]
    if kind == "MPIJob":  # only the launcher decides; a worker that fails is retried by nobody
        failed = [rt for rt in failed if rt == "Launcher"]
    if failed:
        rt = failed[0]
        return (
            "Failed",
            f"{kind} {name} is failed because {len([p for p in pods_by_type[rt] if phase(p) == 'Failed'])} {rt} replica(s) failed.",
        )
    lead = next((t for t in ("Chief", "Master", "Launcher") if t in counts), None)
    if lead:
        done = pods_by_type.get(lead, [])
    elif kind == "TFJob":
        done = [
            p for p in pods_by_type.get("Worker", []) if p["metadata"]["name"].endswith("-worker-0")
        ]
    else:
        done = pods_by_type.get("Worker", [])
        done = done if len(done) == counts.get("Worker", 0) else []
    if done and all(phase(p) == "Succeeded" for p in done):
        return "Succeeded", f"{kind} {name} is successfully completed."
    if len(all_pods) == sum(counts.values()) and all(
        phase(p) in ("Running", "Succeeded") for p in all_pods
    ):
        return "Running", f"{kind} {name} is running."
    return "Created", f"{kind} {name} is created."


def write_status(store: Store, res: Resource, job: dict[str, Any],
                 pods_by_type: dict[str, list[dict[str, Any]]], ctype: str, msg: str,
                 jobs_status: list[dict[str, Any]] | None = None) -> None:  # fmt: skip
    """Append the condition (v1 bookkeeping: Running flips to False on an end) and
    counts; a TrainJob only gets Complete/Failed/Suspended and ``jobsStatus``."""
    kind, md = res.kind, job["metadata"]
    counts: dict[str, dict[str, int]] = {}
    for rtype, pods in pods_by_type.items():
        c = counts.setdefault(rtype, {"active": 0, "succeeded": 0, "failed": 0})
        for p in pods:
            key = {"Running": "active", "Succeeded": "succeeded", "Failed": "failed"}.get(phase(p))
            if key:
                c[key] += 1

    def apply(obj: dict[str, Any]) -> None:
        st = obj["status"] = obj.get("status") or {}  # a v2.0 TrainJob's may be null
        conds = st.setdefault("conditions", [])
        if kind == "TrainJob":
            st["jobsStatus"] = jobs_status or []
            if ctype in ("Created", "Running"):
                return
            if not any(c["type"] == ctype and c["status"] == "True" for c in conds):
                conds.append({"type": ctype, "status": "True", "reason": _trainjob_reason(ctype),
                              "message": msg, "lastTransitionTime": now_iso()})  # fmt: skip
            return
        if not conds or conds[-1]["type"] != ctype:
            for c in conds:
                if c["type"] == "Running" and ctype in ("Succeeded", "Failed", "Suspended"):
                    c["status"] = "False"
            if ctype == "Running" and conds and conds[-1]["type"] == "Suspended":
                conds[-1]["status"] = "False"
            conds.append({"type": ctype, "status": "True", "reason": f"{kind}{ctype}", "message": msg,
                          "lastUpdateTime": now_iso(), "lastTransitionTime": now_iso()})  # fmt: skip
        st["replicaStatuses"] = counts
        st.setdefault("startTime", now_iso())
        if ctype in ("Succeeded", "Failed"):
            st.setdefault("completionTime", now_iso())

    cur = store.get(res.rid, md["namespace"], md["name"])
    if cur is None:
        return
    before = copy.deepcopy(cur.get("status"))
    apply(cur)
    if cur.get("status") != before:
        store.mutate(res.rid, md["namespace"], md["name"], apply)


def _trainjob_reason(ctype: str) -> str:
    return {"Complete": "JobSetCompleted", "Failed": "JobSetFailed"}.get(ctype, ctype)


def finished(job: dict[str, Any]) -> bool:
    conds = (job.get("status") or {}).get("conditions") or []
    return any(
        c["type"] in ("Succeeded", "Failed", "Complete") and c["status"] == "True" for c in conds
    )


def replica_map(kind: str, job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return dict(((job.get("spec") or {}).get(REPLICA_MAPS[kind])) or {})
