"""A test-side Kubeflow operator: turns each accepted TFJob / PyTorchJob / MPIJob /
TrainJob into pods named and labelled like the real operators (operator-contract.md §1.3, §1.4,
§3.2, §3.4, §4.2), with the replica environment from ``jupyter_ddl.contract`` (local
addresses, since every "pod" is a process on 127.0.0.1), and keeps the job's status
(conditions, replicaStatuses) as the operators do (§1.5, §3.4, §4.4).
"""

from __future__ import annotations

import copy
import socket
import threading
import uuid
from typing import Any

from jupyter_ddl import contract
from jupyter_ddl.models import JobSpec

from .resources import Catalog, Resource
from .store import Store, now_iso

PODS = "core/v1/pods"
MAPS = {"TFJob": "tfReplicaSpecs", "PyTorchJob": "pytorchReplicaSpecs", "MPIJob": "mpiReplicaSpecs"}
DEFAULT_POLICY = {
    "TFJob": "Never",
    "PyTorchJob": "OnFailure",
    "MPIJob": "OnFailure",
    "TrainJob": "OnFailure",
}
OPERATOR_NAME = {
    "TFJob": "tfjob-controller",
    "PyTorchJob": "pytorchjob-controller",
    "MPIJob": "mpi-operator",
}
L = "training.kubeflow.org/"
JS = "jobset.sigs.k8s.io/"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def replica_specs(kind: str, job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Replica type -> {replicas, template, restartPolicy}; a TrainJob has ``Node``."""
    spec = job.get("spec") or {}
    if kind == "TrainJob":
        tr = spec.get("trainer") or {}
        container = {"name": "node", "image": tr.get("image", "runtime-image"), "command": tr.get("command"),
                     "args": tr.get("args"), "env": tr.get("env") or [], "resources": tr.get("resourcesPerNode") or {}}  # fmt: skip
        template: dict[str, Any] = {"metadata": {}, "spec": {"containers": [container]}}
        for patch in spec.get("runtimePatches") or []:  # our pod-level patches (§4.1)
            rjobs = (
                (
                    ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec")
                    or {}
                ).get("replicatedJobs")
            ) or []
            for rj in rjobs:
                if rj.get("name") == "node":
                    _apply_pod_patch(
                        template,
                        ((rj.get("template") or {}).get("spec") or {}).get("template") or {},
                    )
        return {"Node": {"replicas": tr.get("numNodes", 1), "template": template}}
    return dict(spec.get(MAPS[kind]) or {})


def _apply_pod_patch(template: dict[str, Any], patch: dict[str, Any]) -> None:
    """Merge a runtime patch's pod template into ``template`` (labels, volumes, mounts)."""
    md, pmd = template.setdefault("metadata", {}), patch.get("metadata") or {}
    for key in ("labels", "annotations"):
        md[key] = {**(md.get(key) or {}), **(pmd.get(key) or {})}
    pspec, tspec = patch.get("spec") or {}, template["spec"]
    for key, value in pspec.items():
        if key == "containers":
            for pc in value:
                for c in tspec["containers"]:
                    if c["name"] == pc["name"]:
                        c["volumeMounts"] = (c.get("volumeMounts") or []) + (
                            pc.get("volumeMounts") or []
                        )
        elif key == "volumes":
            tspec["volumes"] = (tspec.get("volumes") or []) + value
        else:
            tspec[key] = value


def spec_from_manifest(kind: str, job: dict[str, Any]) -> JobSpec:
    """The JobSpec that ``contract.replica_env`` needs, read back from the manifest only."""
    reps = {t: int(r.get("replicas", 1)) for t, r in replica_specs(kind, job).items()}
    spec = job.get("spec") or {}
    if kind == "TFJob":
        strategy = "tf-parameter-server" if "PS" in reps else "tf-multi-worker-mirrored"
    elif kind == "PyTorchJob":
        strategy = "torch-elastic" if spec.get("elasticPolicy") else "torch-ddp"
    elif kind == "MPIJob":
        strategy = "horovod"
    else:
        strategy = "torch-ddp"
    from jupyter_ddl.strategies import get_strategy

    counts = {r.role: 0 for r in get_strategy(strategy).roles} | reps
    nproc = spec.get("nprocPerNode") or (spec.get("trainer") or {}).get("numProcPerNode")
    return JobSpec(
        name=job["metadata"]["name"],
        strategy=strategy,
        replicas=counts,
        target="TrainJob" if kind == "TrainJob" else None,
        runtime_ref=(spec.get("runtimeRef") or {}).get("name"),
        slots_per_worker=int(spec.get("slotsPerWorker") or 1),
        nproc_per_node=int(nproc) if str(nproc or "").isdigit() else None,
    )


class Operator:
    def __init__(self, store: Store, catalog: Catalog) -> None:
        self.store, self.catalog = store, catalog
        self.late: dict[str, float] = {}  # pod-name part -> seconds before it is created
        self.created_at: dict[str, float] = {}
        self.endpoints: dict[str, contract.Endpoints] = {}
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="operator", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(5)

    def _loop(self) -> None:
        import time

        while not self._stop.is_set():
            for res in self.catalog.served():
                if res.kind in ("TFJob", "PyTorchJob", "MPIJob", "TrainJob"):
                    jobs, _ = self.store.list(res.rid, None)
                    for job in jobs:
                        self.created_at.setdefault(job["metadata"]["uid"], time.monotonic())
                        self.reconcile(
                            res, job, time.monotonic() - self.created_at[job["metadata"]["uid"]]
                        )
            self.store.wait(0.2)

    # -- reconcile -------------------------------------------------------------------
    def reconcile(self, res: Resource, job: dict[str, Any], age: float) -> None:
        kind, md = res.kind, job["metadata"]
        conds = (job.get("status") or {}).get("conditions") or []
        if any(
            c["type"] in ("Succeeded", "Failed", "Complete") and c["status"] == "True"
            for c in conds
        ):
            return
        suspended = (
            (job.get("spec") or {}).get("suspend")
            if kind == "TrainJob"
            else ((job.get("spec") or {}).get("runPolicy") or {}).get("suspend")
        )
        pods = self._pods(kind, md["namespace"], md["name"])
        if suspended:
            for p in pods:
                self.store.delete(PODS, md["namespace"], p["metadata"]["name"])
            return self._status(res, job, pods, "Suspended", f"{kind} {md['name']} is suspended.")
        spec = spec_from_manifest(kind, job)
        if md["uid"] not in self.endpoints:
            ids = contract.replica_ids(spec)
            self.endpoints[md["uid"]] = contract.local_endpoints(spec, [free_port() for _ in ids])
        have = {p["metadata"]["name"] for p in pods}
        for rtype, rspec in replica_specs(kind, job).items():
            for i in range(int(rspec.get("replicas", 1))):
                pname = self._pod_name(kind, md["name"], rtype, i)
                delay = next((s for part, s in self.late.items() if part in pname), 0.0)
                if pname not in have and age >= delay:
                    self._create_pod(kind, job, spec, rtype, i, rspec, pname)
        pods = self._pods(kind, md["namespace"], md["name"])
        self._status(res, job, pods, *self._judge(kind, job, pods))

    def _pod_name(self, kind: str, job: str, rtype: str, i: int) -> str:
        if kind == "TrainJob":
            return f"{job}-node-0-{i}"
        if kind == "MPIJob" and rtype == "Launcher":
            return f"{job}-launcher"
        return f"{job}-{rtype.lower()}-{i}"

    def _labels(self, kind: str, job: str, rtype: str, i: int, master: bool) -> dict[str, str]:
        if kind == "TrainJob":
            return {f"{JS}jobset-name": job, f"{JS}replicatedjob-name": "node", f"{JS}job-index": "0",
                    "batch.kubernetes.io/job-completion-index": str(i)}  # fmt: skip
        labels = {f"{L}operator-name": OPERATOR_NAME[kind], f"{L}job-name": job}
        if kind == "MPIJob":
            labels[f"{L}job-role"] = rtype.lower()
            if rtype == "Worker":
                labels[f"{L}replica-index"] = str(i)
            return labels
        labels |= {f"{L}replica-type": rtype.lower(), f"{L}replica-index": str(i)}
        if master:
            labels[f"{L}job-role"] = "master"
        return labels

    def _pods(self, kind: str, ns: str, job: str) -> list[dict[str, Any]]:
        sel = f"{JS}jobset-name={job}" if kind == "TrainJob" else f"{L}job-name={job}"
        return self.store.list(PODS, ns, sel)[0]

    def _create_pod(
        self,
        kind: str,
        job: dict[str, Any],
        spec: JobSpec,
        rtype: str,
        i: int,
        rspec: dict[str, Any],
        pname: str,
    ) -> None:
        md = job["metadata"]
        types = set(replica_specs(kind, job))
        master_type = next((t for t in ("Chief", "Master") if t in types), None)
        master = rtype == master_type or (master_type is None and rtype == "Worker" and i == 0)
        tmpl = copy.deepcopy(rspec.get("template") or {})
        pspec = tmpl.get("spec") or {}
        env = contract.replica_env(
            spec, "Node" if kind == "TrainJob" else rtype, i, self.endpoints[md["uid"]]
        )
        for c in pspec.get("containers", [])[:1]:  # the operators set env on the main container
            c["env"] = (c.get("env") or []) + [{"name": k, "value": v} for k, v in env.items()]
        if kind == "MPIJob" and rtype == "Launcher":
            self._mpi_hostfile(job, spec, pspec)
        for c in pspec.get("containers", []):  # the API server serves quantities as strings
            for part in ("limits", "requests"):
                res = (c.get("resources") or {}).get(part) or {}
                res.update({k: str(v) for k, v in res.items()})
        pspec["restartPolicy"] = {"ExitCode": "Never"}.get(
            rspec.get("restartPolicy") or DEFAULT_POLICY[kind],
            rspec.get("restartPolicy") or DEFAULT_POLICY[kind],
        )
        labels = {
            **((tmpl.get("metadata") or {}).get("labels") or {}),
            **self._labels(kind, md["name"], rtype, i, master),
        }
        api_version = job.get("apiVersion", "")
        pod = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pname, "namespace": md["namespace"], "labels": labels,
                         "annotations": (tmpl.get("metadata") or {}).get("annotations") or {},
                         "ownerReferences": [{"apiVersion": api_version, "kind": kind, "name": md["name"],
                                              "uid": md["uid"], "controller": True}]},
            "spec": pspec, "status": {"phase": "Pending"},
        }  # fmt: skip
        try:
            self.store.create(PODS, pod)
        except KeyError:
            pass

    def _mpi_hostfile(self, job: dict[str, Any], spec: JobSpec, pspec: dict[str, Any]) -> None:
        """ConfigMap ``<job>-config`` at /etc/mpi in the launcher (§3.2, §3.3); every
        "worker" is this host, so the hostfile is the local one-line form (§7)."""
        md = job["metadata"]
        hostfile = contract.mpi_hostfile(spec, self.endpoints[md["uid"]], local=True)
        cm = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": f"{md['name']}-config", "namespace": md["namespace"],
                           "ownerReferences": [{"apiVersion": job["apiVersion"], "kind": "MPIJob", "name": md["name"], "uid": md["uid"]}]},
              "data": {"hostfile": hostfile, "discover_hosts.sh": "#!/bin/sh\necho localhost\n"}}  # fmt: skip
        try:
            self.store.create("core/v1/configmaps", cm)
        except KeyError:
            pass
        pspec.setdefault("volumes", []).append(
            {"name": "mpi-job-config", "configMap": {"name": f"{md['name']}-config"}}
        )
        c = pspec["containers"][0]
        c.setdefault("volumeMounts", []).append({"name": "mpi-job-config", "mountPath": "/etc/mpi"})

    # -- status (§1.5, §3.4, §4.4) -------------------------------------------------------
    def _judge(self, kind: str, job: dict[str, Any], pods: list[dict[str, Any]]) -> tuple[str, str]:
        name = job["metadata"]["name"]
        phases = {
            p["metadata"]["name"]: (p.get("status") or {}).get("phase", "Pending") for p in pods
        }
        types = list(replica_specs(kind, job))
        total = sum(int(r.get("replicas", 1)) for r in replica_specs(kind, job).values())
        if any(v == "Failed" for v in phases.values()):
            return "Failed", f"{kind} {name} has failed because a pod failed."
        lead = next((t for t in ("Chief", "Master", "Launcher") if t in types), None)
        lead_pods = [n for n in phases if (lead and f"-{lead.lower()}" in n)] if lead else []
        done = lead_pods or (
            [n for n in phases if n.endswith("-worker-0")] if kind == "TFJob" else list(phases)
        )
        if (
            done
            and len(phases) >= (1 if lead_pods else total)
            and all(phases[n] == "Succeeded" for n in done)
        ):
            return (
                "Complete" if kind == "TrainJob" else "Succeeded"
            ), f"{kind} {name} is successfully completed."
        restarts = sum(
            cs.get("restartCount", 0)
            for p in pods
            for cs in (p.get("status") or {}).get("containerStatuses") or []
        )
        limit = ((job.get("spec") or {}).get("runPolicy") or {}).get("backoffLimit")
        if limit is not None and restarts > int(limit):
            return (
                "Failed",
                f"{kind} {name} has failed because it has reached the specified backoff limit",
            )
        if len(phases) == total and all(v in ("Running", "Succeeded") for v in phases.values()):
            return "Running", f"{kind} {name} is running."
        return "Created", f"{kind} {name} is created."

    def _status(
        self, res: Resource, job: dict[str, Any], pods: list[dict[str, Any]], ctype: str, msg: str
    ) -> None:
        kind, md = res.kind, job["metadata"]
        counts: dict[str, dict[str, int]] = {}
        for p in pods:
            labels = p["metadata"]["labels"]
            rtype = (
                "Node"
                if kind == "TrainJob"
                else (labels.get(f"{L}replica-type") or labels.get(f"{L}job-role", "")).capitalize()
            )
            rtype = {"Ps": "PS"}.get(rtype, rtype)
            phase = (p.get("status") or {}).get("phase", "Pending")
            c = counts.setdefault(rtype, {"active": 0, "succeeded": 0, "failed": 0})
            key = {"Running": "active", "Succeeded": "succeeded", "Failed": "failed"}.get(phase)
            if key:
                c[key] += 1

        def apply(obj: dict[str, Any]) -> None:
            st = obj.setdefault("status", {})
            conds = st.setdefault("conditions", [])
            if kind == "TrainJob" and ctype in ("Created", "Running"):
                st["jobsStatus"] = [
                    {"name": "node", **{k: v for k, v in counts.get("Node", {}).items()}}
                ]
                return
            if not conds or conds[-1]["type"] != ctype:
                for c in conds:
                    if c["type"] == "Running" and ctype in ("Succeeded", "Failed", "Suspended"):
                        c["status"] = "False"
                if ctype == "Running" and conds and conds[-1]["type"] == "Suspended":
                    conds[-1]["status"] = "False"
                conds.append({"type": ctype, "status": "True", "reason": f"{kind}{ctype}", "message": msg,
                              "lastUpdateTime": now_iso(), "lastTransitionTime": now_iso()})  # fmt: skip
            if kind != "TrainJob":
                st["replicaStatuses"] = counts
            st.setdefault("startTime", now_iso())
            if ctype in ("Succeeded", "Failed", "Complete"):
                st["completionTime"] = now_iso()

        cur = self.store.get(res.rid, md["namespace"], md["name"])
        if cur is None:
            return
        before = copy.deepcopy(cur.get("status"))
        apply(cur)
        if cur.get("status") != before:
            self.store.mutate(res.rid, md["namespace"], md["name"], apply)
        if ctype in ("Succeeded", "Failed", "Complete"):
            self._cleanup(kind, job, pods)

    def _cleanup(self, kind: str, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        policy = ((job.get("spec") or {}).get("runPolicy") or {}).get("cleanPodPolicy", "None")
        for p in pods:
            phase = (p.get("status") or {}).get("phase")
            if policy == "All" or (policy == "Running" and phase in ("Running", "Pending")):
                self.store.delete(PODS, job["metadata"]["namespace"], p["metadata"]["name"])


__all__ = ["Operator", "spec_from_manifest", "uuid"]
