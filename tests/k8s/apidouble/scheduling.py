"""The scheduler's part of the test double's kubelet: Volcano and coscheduling gangs,
and placing pods on nodes (the attach/detach controller's Multi-Attach refusal for a
ReadWriteOnce claim used from two nodes). ``Kubelet`` inherits these."""

from __future__ import annotations

import json
from typing import Any

from . import podstatus as P
from .policy import SIDECAR_STATUS
from .scenario import Scenario
from .store import Store

PODS = "core/v1/pods"
VOLCANO_PODGROUPS = "scheduling.volcano.sh/v1beta1/podgroups"
VOLCANO_GROUP = "scheduling.k8s.io/group-name"
COSCHED_PODGROUPS = "scheduling.x-k8s.io/v1alpha1/podgroups"
COSCHED_LABEL = "scheduling.x-k8s.io/pod-group"


class Scheduling:
    store: Store
    scenario: Scenario

    def _set_status(self, ns: str, name: str, status: dict[str, Any]) -> None: ...

    def _event(self, ns: str, kind: str, name: str, reason: str, message: str) -> None: ...

    # -- scheduling ------------------------------------------------------------------
    def _gang_ready(self, ns: str, pod: dict[str, Any]) -> bool:
        """Volcano schedules a gang member only once its PodGroup left Pending;
        coscheduling's PreFilter refuses a member while fewer than ``minMember`` pods
        of its group exist (scheduler-plugins ``pkg/coscheduling/core/core.go``)."""
        labels = pod["metadata"].get("labels") or {}
        if labels.get(COSCHED_LABEL):
            return self._cosched_ready(ns, pod, labels[COSCHED_LABEL])
        if (pod.get("spec") or {}).get("schedulerName") != "volcano":
            return True
        group = ((pod["metadata"].get("annotations") or {}).get(VOLCANO_GROUP)) or ""
        pg = self.store.get(VOLCANO_PODGROUPS, ns, group) if group else None
        phase = ((pg or {}).get("status") or {}).get("phase")
        if pg is not None and phase not in (None, "Pending"):
            return True
        name = pod["metadata"]["name"]
        msg = (f"pod group {group} is not ready" if pg is not None
               else f"podgroup {ns}/{group or '<none>'} not found; the pod waits for it")  # fmt: skip
        self._set_status(ns, name, P.unschedulable(msg))
        self._event(ns, "Pod", name, "FailedScheduling", msg)
        return False

    def _cosched_ready(self, ns: str, pod: dict[str, Any], group: str) -> bool:
        name = pod["metadata"]["name"]
        pg = self.store.get(COSCHED_PODGROUPS, ns, group)
        if pg is None:
            msg = f'podgroups.scheduling.x-k8s.io "{group}" not found'
        else:
            want = int((pg.get("spec") or {}).get("minMember") or 0)
            have = len(self._members(ns, COSCHED_LABEL, group, labels=True))
            if have >= want:
                return True
            msg = (f"pre-filter pod {name} cannot find enough sibling pods, current pods "
                   f"number: {have}, minMember of group: {want}")  # fmt: skip
        self._set_status(ns, name, P.unschedulable(msg))
        self._event(ns, "Pod", name, "FailedScheduling", msg)
        return False

    def _members(self, ns: str, key: str, group: str, *, labels: bool) -> list[str]:
        """Pods (not being deleted) that name ``group`` under ``key``."""
        where = "labels" if labels else "annotations"
        return [p["metadata"]["name"] for p in self.store.list(PODS, ns)[0]
                if ((p["metadata"].get(where) or {}).get(key)) == group
                and not p["metadata"].get("deletionTimestamp")]  # fmt: skip

    def _volcano(self) -> None:
        """The Volcano scheduler's enqueue and gang plugin: a PodGroup goes Pending ->
        Running only once ``minMember`` of its pods exist (Volcano's job is valid when
        ``ValidTaskNum() >= MinAvailable``), unless a scenario holds it."""
        groups, _ = self.store.list(VOLCANO_PODGROUPS, None)
        for pg in groups:
            md = pg["metadata"]
            phase = (pg.get("status") or {}).get("phase")
            if phase not in (None, "Pending"):
                continue
            members = int((pg.get("spec") or {}).get("minMember", 1))
            have = len(self._members(md["namespace"], VOLCANO_GROUP, md["name"], labels=False))
            if have < members:
                if phase is None:
                    self.store.mutate(VOLCANO_PODGROUPS, md["namespace"], md["name"],
                                      lambda o: o.setdefault("status", {}).update(phase="Pending"))  # fmt: skip
                self._event(md["namespace"], "PodGroup", md["name"], "Unschedulable",
                            f"{have}/{members} tasks in gang unschedulable: pod group is not ready, "
                            f"{have} Pending, {members} minAvailable")  # fmt: skip
                continue
            if md["name"] in self.scenario.gang_pending:
                if phase is None:
                    self.store.mutate(VOLCANO_PODGROUPS, md["namespace"], md["name"],
                                      lambda o: o.setdefault("status", {}).update(phase="Pending"))  # fmt: skip
                self._event(md["namespace"], "PodGroup", md["name"], "Unschedulable",
                            f"{members}/{members} tasks in gang unschedulable: pod group is not ready, "
                            f"{members} Pending, {members} minAvailable")  # fmt: skip
                continue
            self.store.mutate(VOLCANO_PODGROUPS, md["namespace"], md["name"],
                              lambda o: o.setdefault("status", {}).update(phase="Running"))  # fmt: skip

    def _place(self, ns: str, pod: dict[str, Any]) -> bool:
        """Bind the pod to a node; refuse a ReadWriteOnce claim attached to another node."""
        name = pod["metadata"]["name"]
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            node = self.scenario.nodes[next(self._rr) % len(self.scenario.nodes)]
            self.store.mutate(PODS, ns, name, lambda o: o["spec"].update(nodeName=node))
        for v in (pod.get("spec") or {}).get("volumes") or []:
            claim = str((v.get("persistentVolumeClaim") or {}).get("claimName") or "")
            pvc = self.store.get("core/v1/persistentvolumeclaims", ns, claim) if claim else None
            if not pvc or (pvc.get("spec") or {}).get("accessModes") != ["ReadWriteOnce"]:
                continue
            users = [p["metadata"]["name"] for p in self.store.list(PODS, ns)[0]
                     if p["metadata"]["name"] != name and _uses(p, claim)
                     and (p.get("spec") or {}).get("nodeName") not in (None, node)
                     and (p.get("status") or {}).get("phase") == "Running"]  # fmt: skip
            if users:
                volume = (pvc.get("spec") or {}).get(
                    "volumeName"
                ) or f"pvc-{pvc['metadata']['uid']}"
                msg = (f'Multi-Attach error for volume "{volume}" Volume is already used by '
                       f"pod(s) {', '.join(users)}")  # fmt: skip
                self._set_status(ns, name, P.pod("Pending", [P.waiting(main_container(pod)["name"],
                                                                      "ContainerCreating")]))  # fmt: skip
                self._event(ns, "Pod", name, "FailedAttachVolume", msg)
                return False
        return True


def sidecar_names(pod: dict[str, Any]) -> list[str]:
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(SIDECAR_STATUS)
    return list(json.loads(raw).get("containers") or []) if raw else []


def main_container(pod: dict[str, Any]) -> dict[str, Any]:
    """The container that runs: the first one no webhook injected."""
    injected = set(sidecar_names(pod))
    containers = pod["spec"]["containers"]
    return next((c for c in containers if c["name"] not in injected), containers[0])


def _uses(pod: dict[str, Any], claim: str) -> bool:
    return any((v.get("persistentVolumeClaim") or {}).get("claimName") == claim
               for v in (pod.get("spec") or {}).get("volumes") or [])  # fmt: skip
