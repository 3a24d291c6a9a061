"""A test-side Trainer v2 controller (plus the JobSet and Job controllers under it):
TrainJob + its ClusterTrainingRuntime -> pods.

What it reads, as Trainer does (operator-contract.md §4.1-§4.4): the runtime's
replicatedJobs are the pod templates; the replicatedJob whose Job template carries
``trainer.kubeflow.org/trainjob-ancestor-step: trainer`` gets ``spec.trainer`` (image,
command, args, env, resourcesPerNode) on its ``node`` container, and only that one: in
v2.3's ``deepspeed-distributed`` that is the launcher, so the node pods keep the runtime
image and its sshd. ``mlPolicy.numNodes`` / ``trainer.numNodes`` count the node pods,
minus one when ``mpi.runLauncherAsNode`` (the launcher is node 0). The TrainJob's
pod override field is the one its release knows (``podSpecOverrides`` v2.0,
``podTemplateOverrides`` v2.1, ``runtimePatches`` from v2.2); the API server has pruned
any other. Pods come from one Indexed Job per replicatedJob, ``<job>-<rjob>-0``, named
``<job>-<rjob>-0-<index>-<5 chars>``, hostname without the suffix, subdomain the
TrainJob. ``dependsOn: Ready`` holds the launcher until the nodes run, and a finished
JobSet deletes the Jobs still active (its sshd nodes, say), as JobSet's reconcile does.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from . import envs
from . import jobstatus as J

if TYPE_CHECKING:
    from .operator import Operator
    from .resources import Resource

PODS = "core/v1/pods"
RUNTIMES = "trainer.kubeflow.org/v1alpha1/clustertrainingruntimes"
NS_RUNTIMES = "trainer.kubeflow.org/v1alpha1/trainingruntimes"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
JS = "jobset.sigs.k8s.io/"
JOBSETS = "jobset.x-k8s.io/v1alpha2/jobsets"


class TrainerController:
    def __init__(self, op: Operator) -> None:
        self.op = op

    def reconcile(self, res: Resource, job: dict[str, Any], age: float) -> None:
        store, md, spec = self.op.store, job["metadata"], job.get("spec") or {}
        ns, name = md["namespace"], md["name"]
        ref = spec.get("runtimeRef") or {}
        if ref.get("kind") == "TrainingRuntime":  # a namespaced runtime, in the job's namespace
            runtime = store.get(NS_RUNTIMES, ns, ref.get("name", ""))
        else:
            runtime = store.get(RUNTIMES, "", ref.get("name", ""))
        pods = store.list(PODS, ns, f"{JS}jobset-name={name}")[0]
        if spec.get("suspend"):
            for p in pods:
                store.delete(PODS, ns, p["metadata"]["name"])
            return J.write_status(
                store, res, job, {}, "Suspended", f"TrainJob {name} is suspended."
            )
        if runtime is None:
            return  # Trainer waits for the runtime; the TrainJob gets no status
        self._jobset(job)
        rspec = runtime.get("spec") or {}
        mpi = (rspec.get("mlPolicy") or {}).get("mpi")
        nodes = int(
            (spec.get("trainer") or {}).get("numNodes")
            or (rspec.get("mlPolicy") or {}).get("numNodes")
            or 1
        )
        by_job: dict[str, list[dict[str, Any]]] = {}
        for p in pods:
            by_job.setdefault(
                p["metadata"]["labels"].get(f"{JS}replicatedjob-name", ""), []
            ).append(p)
        rjobs = ((rspec.get("template") or {}).get("spec") or {}).get("replicatedJobs") or []
        for rjob in rjobs:
            late = next(
                (t for part, t in self.op.late.items() if part in f"{name}-{rjob['name']}"), 0.0
            )
            if age < late:  # a slow chain of webhooks and controllers below the JobSet
                continue
            count = 1 if rjob["name"] == "launcher" else nodes
            if rjob["name"] == "node" and mpi and mpi.get("runLauncherAsNode"):
                count = max(nodes - 1, 1)
            if not self._depends_met(rjob, by_job):
                continue
            # a failed pod's index gets a new pod until its Job passes backoffLimit
            # (restartPolicy Never: the Job controller, not the kubelet, retries)
            if past_backoff_limit(rjob, by_job.get(rjob["name"], [])):
                continue
            have = {int(p["metadata"]["labels"].get("batch.kubernetes.io/job-completion-index", -1))
                    for p in by_job.get(rjob["name"], []) if J.phase(p) != "Failed"}  # fmt: skip
            for i in range(count):
                if i not in have:
                    self._create(job, runtime, rjob, i, count, nodes)
        pods = store.list(PODS, ns, f"{JS}jobset-name={name}")[0]
        by_job = {}
        for p in pods:
            by_job.setdefault(
                p["metadata"]["labels"].get(f"{JS}replicatedjob-name", ""), []
            ).append(p)
        ctype, msg = self._judge(name, rspec, rjobs, by_job)
        statuses = [{"name": r["name"], "ready": sum(J.phase(p) == "Running" for p in by_job.get(r["name"], [])),
                     "succeeded": sum(J.phase(p) == "Succeeded" for p in by_job.get(r["name"], [])),
                     "failed": sum(J.phase(p) == "Failed" for p in by_job.get(r["name"], [])),
                     "active": sum(J.phase(p) in ("Running", "Pending") for p in by_job.get(r["name"], [])),
                     "suspended": 0} for r in rjobs]  # fmt: skip
        if ctype in ("Complete", "Failed") or self.op.catalog.trainer != "v2.0.0":
            # v2.0 declares status.jobsStatus but never writes it: a TrainJob has no
            # status until its end condition (kubeflow/trainer v2.0.0 writes only
            # conditions; v2.1 on set JobsStatus, pkg/runtime/framework/plugins/jobset)
            J.write_status(store, res, job, by_job, ctype, msg, statuses)
        if ctype in ("Complete", "Failed"):  # a finished JobSet deletes its active Jobs
            for p in pods:
                if J.phase(p) in ("Running", "Pending"):
                    store.delete(PODS, ns, p["metadata"]["name"])

    def _jobset(self, job: dict[str, Any]) -> None:
        """The JobSet Trainer creates for the TrainJob, owned by it (its spec is not
        modelled: the Jobs and pods below are made here directly)."""
        from .operator import owner

        md = job["metadata"]
        if self.op.store.get(JOBSETS, md["namespace"], md["name"]) is None:
            try:
                self.op.store.create(JOBSETS, {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                    "metadata": {"name": md["name"], "namespace": md["namespace"],
                                 "ownerReferences": [owner(job)]}, "spec": {}})  # fmt: skip
            except KeyError:
                pass

    def _depends_met(self, rjob: dict[str, Any], by_job: dict[str, list[dict[str, Any]]]) -> bool:
        for dep in rjob.get("dependsOn") or []:
            pods = by_job.get(dep["name"], [])
            want = ("Running", "Succeeded") if dep.get("status") == "Ready" else ("Succeeded",)
            if not pods or not all(J.phase(p) in want for p in pods):
                return False
        return True

    def _judge(self, name: str, rspec: dict[str, Any], rjobs: list[dict[str, Any]],
               by_job: dict[str, list[dict[str, Any]]]) -> tuple[str, str]:  # fmt: skip
        for rjob in rjobs:  # JobSet's failurePolicy: no restarts, so one failed Job ends it
            if past_backoff_limit(rjob, by_job.get(rjob["name"], [])):
                return "Failed", (f"jobset {name} failed: job {name}-{rjob['name']}-0 has "
                                  "reached the specified backoff limit")  # fmt: skip
        policy = ((rspec.get("template") or {}).get("spec") or {}).get("successPolicy") or {}
        targets = policy.get("targetReplicatedJobs") or [r["name"] for r in rjobs]
        done = [p for t in targets for p in by_job.get(t, [])]
        if done and all(J.phase(p) == "Succeeded" for p in done):
            return "Complete", f"jobset {name} completed successfully"
        return "Created", ""

    def _create(self, job: dict[str, Any], runtime: dict[str, Any], rjob: dict[str, Any],
                index: int, count: int, nodes: int) -> None:  # fmt: skip
        op, md, spec = self.op, job["metadata"], job.get("spec") or {}
        rspec = runtime.get("spec") or {}
        policy = rspec.get("mlPolicy") or {}
        jtmpl = rjob.get("template") or {}
        tmpl = copy.deepcopy(((jtmpl.get("spec") or {}).get("template")) or {})
        pspec = tmpl.setdefault("spec", {})
        pspec.setdefault("restartPolicy", "OnFailure")  # JobSet's default for its Jobs
        trainer_job = ((jtmpl.get("metadata") or {}).get("labels") or {}).get(ANCESTOR) == "trainer"
        node = next((c for c in pspec.get("containers") or [] if c.get("name") == "node"), None)
        tr = spec.get("trainer") or {}
        if trainer_job and node is not None:
            for key in ("image", "command", "args"):
                if tr.get(key):
                    node[key] = tr[key]
            node["env"] = (node.get("env") or []) + list(tr.get("env") or [])
            if tr.get("resourcesPerNode"):
                node["resources"] = tr["resourcesPerNode"]
        if node is not None and policy.get("torch") is not None and trainer_job:
            trainer = {**tr, "numNodes": nodes}
            if (
                trainer.get("numProcPerNode") is None
                and str(policy["torch"].get("numProcPerNode", "")).isdigit()
            ):
                trainer["numProcPerNode"] = policy["torch"]["numProcPerNode"]
            node["env"] = node["env"] + envs.trainjob_torch_env(trainer, nodes, op.addr(job))
        if node is not None and policy.get("mpi") is not None and rjob["name"] == "launcher":
            slots = int(tr.get("numProcPerNode") or policy["mpi"].get("numProcPerNode") or 1)
            node["env"] = (node.get("env") or []) + envs.trainjob_mpi_launcher_env(slots)
            self._hostfile(job, pspec, node, slots, nodes)
        _apply_overrides(spec, rjob["name"], tmpl)
        labels = {f"{JS}jobset-name": md["name"], f"{JS}replicatedjob-name": rjob["name"],
                  f"{JS}job-index": "0", f"{JS}replicatedjob-replicas": "1",
                  f"{JS}job-global-index": "0"}  # fmt: skip
        bjob = op.ensure_batch_job(job, f"{md['name']}-{rjob['name']}-0", labels)
        host = f"{md['name']}-{rjob['name']}-0-{index}"
        pod = op.job_pod(bjob, tmpl, labels, index, host, md["name"])
        pod["metadata"]["name"] = f"{host}-{pod['metadata']['name'].rsplit('-', 1)[-1]}"
        refused = op.create_pod(pod)
        if refused is not None:
            op.event(
                job, "Job", bjob["metadata"]["name"], "FailedCreate", f"Error creating: {refused}"
            )

    def _hostfile(self, job: dict[str, Any], pspec: dict[str, Any], node: dict[str, Any],
                  slots: int, nodes: int) -> None:  # fmt: skip
        md = job["metadata"]
        name = f"{md['name']}-mpi-hostfile"
        try:
            from .operator import owner

            self.op.store.create("core/v1/configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": md["namespace"], "ownerReferences": [owner(job)]},
                "data": {"hostfile": envs.mpi_hostfile(slots, nodes)}})  # fmt: skip
        except KeyError:
            pass
        pspec.setdefault("volumes", []).append(
            {"name": "mpi-hostfile", "configMap": {"name": name}}
        )
        node.setdefault("volumeMounts", []).append(
            {"name": "mpi-hostfile", "mountPath": "/etc/mpi"}
        )


def _merge_pod(tmpl: dict[str, Any], meta: dict[str, Any], pspec: dict[str, Any]) -> None:
    """Overlay an override's pod metadata and spec: containers matched by name (env and
    mounts appended), volumes and other lists appended, scalars replaced."""
    md = tmpl.setdefault("metadata", {})
    for key in ("labels", "annotations"):
        if meta.get(key):
            md[key] = {**(md.get(key) or {}), **meta[key]}
    tspec = tmpl.setdefault("spec", {})
    for key, value in pspec.items():
        if key in ("containers", "initContainers"):
            for pc in value:
                for c in tspec.get(key) or []:
                    if c["name"] == pc["name"]:
                        for part in ("env", "volumeMounts"):
                            c[part] = (c.get(part) or []) + (pc.get(part) or [])
        elif isinstance(value, list):
            tspec[key] = (tspec.get(key) or []) + value
        else:
            tspec[key] = value


def _apply_overrides(spec: dict[str, Any], rjob: str, tmpl: dict[str, Any]) -> None:
    for o in spec.get("podSpecOverrides") or []:  # v2.0
        if any(t.get("name") == rjob for t in o.get("targetJobs") or []):
            _merge_pod(tmpl, {}, {k: v for k, v in o.items() if k != "targetJobs"})
    for o in spec.get("podTemplateOverrides") or []:  # v2.1
        if any(t.get("name") == rjob for t in o.get("targetJobs") or []):
            _merge_pod(tmpl, o.get("metadata") or {}, o.get("spec") or {})
    for patch in spec.get("runtimePatches") or []:  # v2.2+
        rts = (patch.get("trainingRuntimeSpec") or {}).get("template") or {}
        for rj in ((rts.get("spec") or {}).get("replicatedJobs")) or []:
            if rj.get("name") == rjob:
                pod = ((rj.get("template") or {}).get("spec") or {}).get("template") or {}
                _merge_pod(tmpl, pod.get("metadata") or {}, pod.get("spec") or {})


#: the Job controller's default ``backoffLimit`` (Trainer's runtimes set none)
JOB_BACKOFF_LIMIT = 6


def past_backoff_limit(rjob: dict[str, Any], pods: list[dict[str, Any]]) -> bool:
    """The Job controller's two counts against ``backoffLimit`` (default 6; kubernetes
    ``pkg/controller/job/job_controller.go``): its failed pods, which fail the Job once
    there are more than the limit; and, under ``OnFailure`` (``pastBackoffLimitOnFailure``),
    the container restarts of its Pending and Running pods, which fail it once they
    reach the limit (any restart when the limit is 0)."""
    jspec = (rjob.get("template") or {}).get("spec") or {}
    limit = jspec.get("backoffLimit")
    limit = JOB_BACKOFF_LIMIT if limit is None else int(limit)
    if sum(J.phase(p) == "Failed" for p in pods) > limit:
        return True
    policy = ((jspec.get("template") or {}).get("spec") or {}).get("restartPolicy")
    if (policy or "OnFailure") != "OnFailure":  # JobSet's default for an unset policy
        return False
    restarts = 0
    for p in pods:
        if J.phase(p) not in ("Pending", "Running"):
            continue
        st = p.get("status") or {}
        for cs in (st.get("initContainerStatuses") or []) + (st.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount") or 0)
    return restarts > 0 if limit == 0 else restarts >= limit
