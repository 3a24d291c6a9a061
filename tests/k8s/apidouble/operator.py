"""Test-side Kubeflow operators: training-operator v1.9 (TFJob, PyTorchJob) and
mpi-operator v0.8 (MPIJob v2beta1) here, Trainer v2 in ``trainer``. They read only
the job object (replica counts, ports, policies) and write pods named and labelled like
the real ones (operator-contract.md §1.3, §1.4, §3.2, §3.4) with the environment of
``envs`` (written from the operators' source, never from the product).

Pods are created through the API server's admission chain (``writes.create_object``),
so quota and policies can refuse them; each operator then reports the refusal the way
it does: training-operator a ``FailedCreatePod`` Warning on the job ("Error creating:
…", ``pkg/controller.v1/control/pod_control.go``), mpi-operator ``MPIJobFailed``
"worker pod created failed: …" on the MPIJob, and for the launcher (a batch Job whose
pod the Job controller names ``<job>-launcher-<5 chars>``) the Job controller's
``FailedCreate`` on that Job. ``Operator.enabled = False`` is a cluster whose operator
is not running: jobs are stored and never get a status.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from . import envs
from . import errors as E
from . import jobstatus as J
from .gc import delete_pod
from .kubelet import record_event
from .policy import Policy
from .resources import Catalog, Resource
from .store import Store
from .writes import create_object, suffix

PODS = "core/v1/pods"
JOBS = "batch/v1/jobs"
L = "training.kubeflow.org/"
DEFAULT_POLICY = {"TFJob": "Never", "PyTorchJob": "OnFailure"}
MPI_DEFAULT_POLICY = {"Launcher": "OnFailure", "Worker": "Never"}
OPERATOR_NAME = {"TFJob": "tfjob-controller", "PyTorchJob": "pytorchjob-controller",
                 "MPIJob": "mpi-operator"}  # fmt: skip
#: the training-operator retries an exit code of 128 or more under restartPolicy
#: ExitCode (v1.9.4 ``pkg/util/train/train_util.go`` IsRetryableExitCode:
#: ``exitCode >= 128``; the 130/137/143 list was tf-operator's rule of 2018, replaced
#: when the controllers moved to kubeflow/common)
RETRYABLE_FROM = 128


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def owner(job: dict[str, Any], controller: bool = True) -> dict[str, Any]:
    md = job["metadata"]
    return {"apiVersion": job.get("apiVersion", ""), "kind": job["kind"], "name": md["name"],
            "uid": md["uid"], "controller": controller, "blockOwnerDeletion": True}  # fmt: skip


class Operator:
    def __init__(self, store: Store, catalog: Catalog, policy: Policy) -> None:
        self.store, self.catalog, self.policy = store, catalog, policy
        self.enabled = True
        self.late: dict[str, float] = {}  # pod-name part -> seconds before it is created
        self.created_at: dict[str, float] = {}
        self.ports: dict[tuple[str, str, int], int] = {}  # (job uid, type, index) -> port
        self._told: set[str] = set()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="operator", daemon=True)
        from .trainer import TrainerController

        self.trainer = TrainerController(self)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            if self.enabled:
                for res in self.catalog.served():
                    if res.kind in ("TFJob", "PyTorchJob", "MPIJob", "TrainJob"):
                        for job in self.store.list(res.rid, None)[0]:
                            uid = job["metadata"]["uid"]
                            age = time.monotonic() - self.created_at.setdefault(
                                uid, time.monotonic()
                            )
                            if job["metadata"].get("deletionTimestamp") or J.finished(job):
                                continue
                            if res.kind == "TrainJob":
                                self.trainer.reconcile(res, job, age)
                            else:
                                self.reconcile(res, job, age)
            self.store.wait(0.2)

    # -- shared helpers ------------------------------------------------------------------
    def addr(self, job: dict[str, Any]) -> envs.Addr:
        uid = job["metadata"]["uid"]

        def at(rtype: str, index: int) -> tuple[str, int]:
            return "127.0.0.1", self.ports.setdefault((uid, rtype, index), free_port())

        return at

    def event(self, job: dict[str, Any], kind: str, name: str, reason: str, message: str) -> None:
        key = f"{job['metadata']['uid']}/{name}/{reason}/{message}"
        if key not in self._told:  # the event recorder aggregates repeats into one
            self._told.add(key)
            record_event(self.store, job["metadata"]["namespace"], kind, name, reason, message)

    def create_pod(self, pod: dict[str, Any]) -> str | None:
        """Create through admission; the refusal's message when refused."""
        res = next(r for r in self.catalog.served() if r.rid == PODS)
        try:
            create_object(self.store, self.policy, res, pod["metadata"]["namespace"], pod)
        except E.ApiError as e:
            return e.body["message"] if isinstance(e.body, dict) else str(e.body)
        except KeyError:
            pass
        return None

    def ensure_batch_job(
        self, job: dict[str, Any], name: str, labels: dict[str, str]
    ) -> dict[str, Any]:
        """The batch/v1 Job object a launcher (or a JobSet replicated job) lives in."""
        ns = job["metadata"]["namespace"]
        cur = self.store.get(JOBS, ns, name)
        if cur is not None:
            return cur
        try:
            return self.store.create(JOBS, {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": name, "namespace": ns, "labels": labels, "ownerReferences": [owner(job)]},
                "spec": {"completionMode": "Indexed"}})  # fmt: skip
        except KeyError:
            return self.store.get(JOBS, ns, name) or {}

    def job_pod(self, bjob: dict[str, Any], template: dict[str, Any], labels: dict[str, str],
                index: int, hostname: str, subdomain: str) -> dict[str, Any]:  # fmt: skip
        """A pod as the Job controller makes it: ``<job>-<index>-<5 chars>`` for Indexed
        Jobs of JobSet, ``<job>-<5 chars>`` for the launcher, completion index labelled."""
        md, spec = template.get("metadata") or {}, dict(template.get("spec") or {})
        spec.update(hostname=hostname, subdomain=subdomain)
        idx = {"batch.kubernetes.io/job-completion-index": str(index)}
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{bjob['metadata']['name']}-{suffix()}", "namespace": bjob["metadata"]["namespace"],
                             "labels": {**(md.get("labels") or {}), **labels, **idx,
                                        "batch.kubernetes.io/job-name": bjob["metadata"]["name"]},
                             "annotations": {**(md.get("annotations") or {}), **idx},
                             "ownerReferences": [owner(bjob)]},
                "spec": spec}  # fmt: skip

    # -- training-operator and mpi-operator -----------------------------------------------
    def _labels(self, kind: str, job: str, rtype: str, i: int, master: bool) -> dict[str, str]:
        labels = {f"{L}operator-name": OPERATOR_NAME[kind], f"{L}job-name": job}
        if kind == "MPIJob":  # role names, no replica-type label (§3.4)
            labels[f"{L}job-role"] = rtype.lower()
            if rtype == "Worker":
                labels[f"{L}replica-index"] = str(i)
            return labels
        labels |= {f"{L}replica-type": rtype.lower(), f"{L}replica-index": str(i)}
        if master:
            labels[f"{L}job-role"] = "master"
        return labels

    def _pods(self, ns: str, job: str) -> list[dict[str, Any]]:
        return self.store.list(PODS, ns, f"{L}job-name={job}")[0]

    def _by_type(self, kind: str, pods: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for p in pods:
            labels = p["metadata"].get("labels") or {}
            rt = labels.get(f"{L}replica-type") if kind != "MPIJob" else labels.get(f"{L}job-role")
            rt = {"ps": "PS"}.get(rt or "", (rt or "").capitalize())
            out.setdefault(rt, []).append(p)
        return out

    def reconcile(self, res: Resource, job: dict[str, Any], age: float) -> None:
        kind, md = res.kind, job["metadata"]
        ns, name = md["namespace"], md["name"]
        specs = J.replica_map(kind, job)
        counts = envs.replicas(kind, job)
        defaults = MPI_DEFAULT_POLICY if kind == "MPIJob" else {}
        policy_of = {rt: (r or {}).get("restartPolicy") or defaults.get(rt) or DEFAULT_POLICY.get(kind, "Never")
                     for rt, r in specs.items()}  # fmt: skip
        pods = self._pods(ns, name)
        if ((job.get("spec") or {}).get("runPolicy") or {}).get("suspend"):
            for p in pods:
                self.store.delete(PODS, ns, p["metadata"]["name"])
            return J.write_status(
                self.store, res, job, {}, "Suspended", f"{kind} {name} is suspended."
            )
        by_type = self._by_type(kind, pods)
        if J.over_backoff_limit(kind, job, by_type, counts, policy_of):
            # training-operator past the limit (v1.9 pkg/controller.v1/common/job.go
            # ReconcileJobs, before it reconciles any pod): every pod is deleted first,
            # whatever cleanPodPolicy says (DeletePodsAndServices of a job not yet
            # finished), and only then is the Failed condition written, so a watch hears
            # the pods go before the job fail
            for p in pods:  # through the API: a pod on a node goes gracefully
                delete_pod(self.store, ns, p["metadata"]["name"])
            ctype, msg = J.judge_v1(kind, job, by_type, counts, policy_of)
            return J.write_status(self.store, res, job, by_type, ctype, msg)
        self._exit_code_restarts(job, kind, pods, policy_of)
        have = {p["metadata"]["name"] for p in self._pods(ns, name)}
        have |= {
            p["metadata"]["labels"].get("batch.kubernetes.io/job-name", "")
            for p in self._pods(ns, name)
        }
        master_type = next((t for t in ("Chief", "Master") if t in counts), None)
        workers_ready = all(
            J.phase(p) == "Running"
            for p in self._by_type(kind, self._pods(ns, name)).get("Worker", [])
        ) and len(self._by_type(kind, self._pods(ns, name)).get("Worker", [])) == counts.get(
            "Worker", 0
        )
        wait_workers = (job.get("spec") or {}).get(
            "launcherCreationPolicy"
        ) == "WaitForWorkersReady"
        for rtype, n in counts.items():
            if kind == "MPIJob" and rtype == "Launcher" and wait_workers and not workers_ready:
                continue  # mpi-operator creates the launcher once every worker is Ready
            for i in range(n):
                launcher = kind == "MPIJob" and rtype == "Launcher"
                pname = f"{name}-launcher" if launcher else f"{name}-{rtype.lower()}-{i}"
                delay = next((s for part, s in self.late.items() if part in pname), 0.0)
                if pname in have or age < delay:
                    continue
                master = rtype == master_type or (
                    master_type is None and rtype == "Worker" and i == 0
                )
                self._create(
                    kind, job, rtype, i, specs[rtype] or {}, pname, master, policy_of[rtype]
                )
        by_type = self._by_type(kind, self._pods(ns, name))
        ctype, msg = J.judge_v1(kind, job, by_type, counts, policy_of)
        J.write_status(self.store, res, job, by_type, ctype, msg)
        if ctype in ("Succeeded", "Failed"):
            self._cleanup(job, self._pods(ns, name))

    def _exit_code_restarts(self, job: dict[str, Any], kind: str, pods: list[dict[str, Any]],
                            policy_of: dict[str, str]) -> None:  # fmt: skip
        """restartPolicy ExitCode: a failed pod whose main container's exit code is
        retryable is deleted, and so re-created (``pkg/controller.v1/common/pod.go``)."""
        main = envs.DEFAULT_CONTAINER.get(kind)
        for rtype, ps in self._by_type(kind, pods).items():
            if policy_of.get(rtype) != "ExitCode":
                continue
            for p in ps:
                if J.phase(p) != "Failed":
                    continue
                code = 0xBEEF  # what the operator uses when the container state is missing
                for cs in (p.get("status") or {}).get("containerStatuses") or []:
                    term = (cs.get("state") or {}).get("terminated")
                    if cs["name"] == main and term:
                        code = int(term["exitCode"])
                if code >= RETRYABLE_FROM:  # 0xbeef, "no terminated state", too
                    self.store.delete(PODS, p["metadata"]["namespace"], p["metadata"]["name"])

    def _create(self, kind: str, job: dict[str, Any], rtype: str, i: int, rspec: dict[str, Any],
                pname: str, master: bool, policy: str) -> None:  # fmt: skip
        import copy

        md = job["metadata"]
        tmpl = copy.deepcopy(rspec.get("template") or {})
        pspec = tmpl.setdefault("spec", {})
        addr = self.addr(job)
        if kind == "TFJob":
            env, targets = (
                envs.tf_env(job, rtype, i, addr),
                [c for c in pspec.get("containers", []) if c.get("name") == "tensorflow"][:1],
            )
        elif kind == "PyTorchJob":
            env, targets = envs.pytorch_env(job, rtype, i, addr), pspec.get("containers", [])
        else:
            env, targets = envs.mpi_env(job, rtype), pspec.get("containers", [])[:1]
        for c in targets:  # appended after the user's own entries (§1.9)
            c["env"] = (c.get("env") or []) + [dict(e) for e in env]
        if kind == "MPIJob" and rtype == "Launcher":
            self._mpi_config(job, pspec)
        pspec["restartPolicy"] = "Never" if policy == "ExitCode" else policy
        replica_specs = (job.get("spec") or {}).get("pytorchReplicaSpecs") or {}
        if kind == "PyTorchJob" and rtype == "Worker" and "Master" in replica_specs:
            pspec["initContainers"] = [init_pytorch(f"{md['name']}-master-0")] + list(
                pspec.get("initContainers") or []
            )
        if kind == "MPIJob" and rtype == "Worker" and pspec.get("containers"):
            pspec.update(hostname=pname, subdomain=md["name"])
        labels = {**((tmpl.get("metadata") or {}).get("labels") or {}),
                  **self._labels(kind, md["name"], rtype, i, master)}  # fmt: skip
        tmpl.setdefault("metadata", {})["labels"] = labels
        if kind == "MPIJob" and rtype == "Launcher":
            bjob = self.ensure_batch_job(job, pname, labels)
            pod = self.job_pod(bjob, tmpl, labels, 0, pname, md["name"])
        else:
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": pname, "namespace": md["namespace"], "labels": labels,
                                "annotations": (tmpl.get("metadata") or {}).get("annotations") or {},
                                "ownerReferences": [owner(job)]},
                   "spec": pspec}  # fmt: skip
        refused = self.create_pod(pod)
        if refused is None:
            return
        if kind == "MPIJob" and rtype == "Launcher":
            self.event(job, "Job", pname, "FailedCreate", f"Error creating: {refused}")
        elif kind == "MPIJob":
            self.event(
                job, "MPIJob", md["name"], "MPIJobFailed", f"worker pod created failed: {refused}"
            )
        else:
            self.event(job, kind, md["name"], "FailedCreatePod", f"Error creating: {refused}")

    def _mpi_config(self, job: dict[str, Any], pspec: dict[str, Any]) -> None:
        """ConfigMap ``<job>-config`` at /etc/mpi in the launcher (§3.2, §3.3)."""
        md, spec = job["metadata"], job.get("spec") or {}
        workers = envs.replicas("MPIJob", job).get("Worker", 0)
        data = {"hostfile": envs.mpi_hostfile(int(spec.get("slotsPerWorker") or 1), workers),
                "discover_hosts.sh": "#!/bin/sh\necho localhost\n"}  # fmt: skip
        try:
            self.store.create("core/v1/configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": f"{md['name']}-config", "namespace": md["namespace"],
                             "ownerReferences": [owner(job)]}, "data": data})  # fmt: skip
        except KeyError:
            pass
        pspec.setdefault("volumes", []).append(
            {"name": "mpi-job-config", "configMap": {"name": f"{md['name']}-config"}}
        )
        c = pspec["containers"][0]
        c.setdefault("volumeMounts", []).append({"name": "mpi-job-config", "mountPath": "/etc/mpi"})

    def _cleanup(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        policy = ((job.get("spec") or {}).get("runPolicy") or {}).get("cleanPodPolicy", "None")
        for p in pods:
            if policy == "All" or (policy == "Running" and J.phase(p) in ("Running", "Pending")):
                self.store.delete(PODS, job["metadata"]["namespace"], p["metadata"]["name"])


__all__ = ["Operator", "free_port", "owner"]


#: training-operator's default image for the worker's init container (to1.9 pkg/config)
INIT_PYTORCH_IMAGE = "alpine:3.10"


def init_pytorch(master: str) -> dict[str, Any]:
    """The init container training-operator puts first in every PyTorchJob worker:
    it polls DNS for the master's Service, 100 tries 2 s apart (to1.9
    ``pkg/controller.v1/pytorch/initcontainer.go``)."""
    loop = (f"err=1;for i in $(seq 100); do if nslookup {master}; then err=0 && break; fi;"
            "echo waiting for master; sleep 2; done; exit $err")  # fmt: skip
    return {"name": "init-pytorch", "image": INIT_PYTORCH_IMAGE, "imagePullPolicy": "IfNotPresent",
            "command": ["sh", "-c", loop],
            "resources": {"limits": {"cpu": "100m", "memory": "20Mi"}}}  # fmt: skip
