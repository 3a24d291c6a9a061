"""What every Kubeflow object we build shares: our labels, pod templates, runPolicy.

Pure functions over plain data. Section numbers refer to ``docs/operator-contract.md``.
The label/annotation constants here are how the Kubernetes backend finds our jobs
again (``%ddl list``, the sidebar) after a kernel or browser restart.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jupyter_ddl.models import JobSpec, Resources
from jupyter_ddl.runtime.ddl_runtime import DIST_BACKEND_ENV, STRATEGY_ENV

# -- labels and annotations we own ---------------------------------------------------
PREFIX = "jupyter-ddl.io/"
LABEL_MANAGED = PREFIX + "managed"  # "true" on every object and pod we create
LABEL_STRATEGY = PREFIX + "strategy"
LABEL_NOTEBOOK = PREFIX + "notebook"  # label-safe form; full path in the annotation
LABEL_USER = PREFIX + "user"
LABEL_CODE_DIGEST = PREFIX + "code-digest"  # first 12 hex digits; full in the annotation
LABEL_CELL = PREFIX + "cell"  # the notebook cell's id (label-safe form; full in the annotation)
ANNOTATION_NOTEBOOK = PREFIX + "notebook"
ANNOTATION_CELL = PREFIX + "cell-id"
ANNOTATION_USER = PREFIX + "user"
ANNOTATION_CODE_DIGEST = PREFIX + "code-digest"
ANNOTATION_SPEC = PREFIX + "spec"  # reserved for the backend: the JobSpec as JSON
MANAGED_SELECTOR = f"{LABEL_MANAGED}=true"
ISTIO_INJECT = "sidecar.istio.io/inject"  # "false": Istio sidecars never exit (§8)

# -- what the runtime shim reads (jupyter_ddl/runtime/ddl_runtime.py) ------------------
JOB_ENV = "JUPYTER_DDL_JOB"

#: where shipped code lives in a replica; equals jupyter_ddl.image.layer.CODE_DIR (tested)
CODE_DIR = "/opt/jupyter-ddl/code"
CODE_VOLUME = "ddl-code"
#: the replicas' working directory: an emptyDir, because a ConfigMap volume is
#: read-only (operator-contract.md §10.16) and a cell writes checkpoints and logs
#: where it runs; the entry point finds the code beside itself, not in the cwd
WORK_DIR = "/opt/jupyter-ddl/work"
WORK_VOLUME = "ddl-work"

# -- gang scheduling (§1.4, §1.8, §3.5) -----------------------------------------------
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_TASK_ANNOTATION = "volcano.sh/task-spec"
COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"
SCHEDULER_NAMES = {"volcano": "volcano", "scheduler-plugins": "scheduler-plugins-scheduler"}


@dataclass(frozen=True)
class Code:
    """What the builders take besides the spec: the image, how one process runs the
    entry point, and how the code travels (its digest; a ConfigMap and its files, or
    None when it is inside the image)."""

    image: str
    command: Sequence[str]
    digest: str | None = None
    configmap: str | None = None
    paths: Sequence[str] | None = None


def configmap_name(job: str) -> str:
    """The ConfigMap holding a job's code when it does not travel in the image."""
    return f"{job}-code"


def secret_name(job: str) -> str:
    """The Secret holding a job's ``secret_env`` values (created by the backend)."""
    return f"{job}-secrets"


def configmap_key(path: str) -> str:
    """ConfigMap keys cannot hold '/': ``pkg/mod.py`` is stored as ``pkg__mod.py``."""
    return path.replace("/", "__")


def label_value(text: str) -> str:
    """``text`` made a valid label value (≤ 63 of [A-Za-z0-9-_.], alphanumeric ends)."""
    s = re.sub(r"[^A-Za-z0-9_.-]+", "-", text)[:63]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", s)


def our_labels(spec: JobSpec, code_digest: str | None) -> dict[str, str]:
    labels = {LABEL_MANAGED: "true", LABEL_STRATEGY: spec.strategy}
    if spec.notebook and label_value(spec.notebook):
        labels[LABEL_NOTEBOOK] = label_value(spec.notebook.rsplit("/", 1)[-1])
    if spec.user and label_value(spec.user):
        labels[LABEL_USER] = label_value(spec.user)
    if spec.cell_id and label_value(spec.cell_id):
        labels[LABEL_CELL] = label_value(spec.cell_id)
    if code_digest:
        labels[LABEL_CODE_DIGEST] = code_digest.split(":", 1)[-1][:12]
    return {**spec.labels, **labels}


def our_annotations(spec: JobSpec, code_digest: str | None) -> dict[str, str]:
    notes = dict(spec.annotations)
    if spec.notebook:
        notes[ANNOTATION_NOTEBOOK] = spec.notebook
    if spec.user:
        notes[ANNOTATION_USER] = spec.user
    if spec.cell_id:
        notes[ANNOTATION_CELL] = spec.cell_id
    if code_digest:
        notes[ANNOTATION_CODE_DIGEST] = code_digest
    return notes


def metadata(spec: JobSpec, code_digest: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": spec.name}
    if spec.namespace:
        meta["namespace"] = spec.namespace
    meta["labels"] = our_labels(spec, code_digest)
    annotations = our_annotations(spec, code_digest)
    if annotations:
        meta["annotations"] = annotations
    return meta


def needs_code_configmap(spec: JobSpec, in_image: bool) -> bool:
    """Does the code travel in a ConfigMap? Always without an image of ours; with one
    too when the job has pods that do not run that image (an MPI runtime's ``node``
    pods keep the runtime's, operator-contract.md §10.19)."""
    return not in_image or spec.shape.trainjob_mpi


# -- containers and pod templates ---------------------------------------------------------
def resources(res: Resources) -> dict[str, Any]:
    """requests/limits: accelerators with requests = limits (§6), memory limited so an
    OOM is reported as such, cpu only requested (a CPU limit throttles collectives)."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    if res.cpu:
        requests["cpu"] = res.cpu
    if res.memory:
        requests["memory"] = limits["memory"] = res.memory
    if res.gpu:
        requests[res.gpu_resource] = limits[res.gpu_resource] = res.gpu
    if res.tpu:
        requests[res.tpu_resource] = limits[res.tpu_resource] = res.tpu
    out: dict[str, Any] = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    return out


def env_list(spec: JobSpec) -> list[dict[str, Any]]:
    """User env as values, secret env by reference only — never the values."""
    env: list[dict[str, Any]] = [{"name": STRATEGY_ENV, "value": spec.strategy}]
    if spec.dist_backend:
        env.append({"name": DIST_BACKEND_ENV, "value": spec.dist_backend})
    env.append({"name": JOB_ENV, "value": spec.name})
    env += [{"name": k, "value": str(v)} for k, v in spec.env.items()]
    env += [
        {"name": k, "valueFrom": {"secretKeyRef": {"name": secret_name(spec.name), "key": k}}}
        for k in spec.secret_env
    ]
    return env


def env_names(spec: JobSpec) -> list[str]:
    """The names ``env_list`` puts in every container, in its order."""
    return [e["name"] for e in env_list(spec)]


def volume_mounts(spec: JobSpec, code_configmap: str | None) -> list[dict[str, Any]]:
    mounts: list[dict[str, Any]] = [{"name": WORK_VOLUME, "mountPath": WORK_DIR}]
    if code_configmap:
        mounts.append({"name": CODE_VOLUME, "mountPath": CODE_DIR, "readOnly": True})
    for i, v in enumerate(spec.volumes):
        m: dict[str, Any] = {"name": v.name or f"data-{i}", "mountPath": v.mount_path}
        if v.read_only:
            m["readOnly"] = True
        if v.sub_path:
            m["subPath"] = v.sub_path
        mounts.append(m)
    return mounts


def volumes(
    spec: JobSpec, code_configmap: str | None, code_paths: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"name": WORK_VOLUME, "emptyDir": {}}]
    if code_configmap:
        cm: dict[str, Any] = {"name": code_configmap}
        if code_paths:
            cm["items"] = [{"key": configmap_key(p), "path": p} for p in sorted(code_paths)]
        out.append({"name": CODE_VOLUME, "configMap": cm})
    for i, v in enumerate(spec.volumes):
        claim: dict[str, Any] = {"claimName": v.claim_name}
        if v.read_only:
            claim["readOnly"] = True
        out.append({"name": v.name or f"data-{i}", "persistentVolumeClaim": claim})
    return out


def tolerations(spec: JobSpec) -> list[dict[str, Any]]:
    out = []
    for t in spec.tolerations:
        item: dict[str, Any] = {"operator": t.operator}
        for key, value in (("key", t.key), ("value", t.value), ("effect", t.effect)):
            if value is not None:
                item[key] = value
        if t.toleration_seconds is not None:
            item["tolerationSeconds"] = t.toleration_seconds
        out.append(item)
    return out


def pod_spec_extras(
    spec: JobSpec, code_configmap: str | None, code_paths: Sequence[str] | None
) -> dict[str, Any]:
    """nodeSelector, tolerations, volumes: what every replica's pod spec shares."""
    out: dict[str, Any] = {}
    if spec.node_selector:
        out["nodeSelector"] = dict(spec.node_selector)
    if spec.tolerations:
        out["tolerations"] = tolerations(spec)
    out["volumes"] = volumes(spec, code_configmap, code_paths)
    return out


def container(
    spec: JobSpec,
    role: str,
    name: str,
    image: str,
    command: Sequence[str] | None,
    code_configmap: str | None,
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": image}
    if command is not None:
        c["command"] = list(command)
    c["workingDir"] = WORK_DIR
    c["env"] = env_list(spec)
    res = resources(spec.shape.resources[role])
    if res:
        c["resources"] = res
    mounts = volume_mounts(spec, code_configmap)
    if mounts:
        c["volumeMounts"] = mounts
    return c


def pod_template(
    spec: JobSpec, role: str, containers: list[dict[str, Any]], code: Code
) -> dict[str, Any]:
    labels = our_labels(spec, code.digest)
    annotations = {**spec.annotations, ISTIO_INJECT: "false"}
    pod: dict[str, Any] = {"containers": containers}
    pod.update(pod_spec_extras(spec, code.configmap, code.paths))
    g = spec.gang
    if g is not None and spec.backend_options.get("gang_podgroup", "client") == "client":
        # we create the PodGroup ourselves, so the pods must name it and the scheduler
        pod["schedulerName"] = spec.backend_options.get(
            "scheduler_name", SCHEDULER_NAMES.get(g.scheduler, g.scheduler)
        )
        if g.scheduler == "volcano":
            annotations[VOLCANO_GROUP_ANNOTATION] = spec.name
            annotations[VOLCANO_TASK_ANNOTATION] = role.lower()
        else:
            labels[COSCHEDULING_LABEL] = spec.name
    if g is not None and g.priority_class:
        pod["priorityClassName"] = g.priority_class
    return {"metadata": {"labels": labels, "annotations": annotations}, "spec": pod}


def restart_policy(spec: JobSpec, default: str) -> str:
    rp = spec.restart_policy
    return default if rp is None else getattr(rp, "value", str(rp))


def replica_spec(replicas: int, restart_policy: str, template: dict[str, Any]) -> dict[str, Any]:
    # replicas always written: a nil Master/Worker count is refused or defaulted badly (§10.5)
    return {"replicas": replicas, "restartPolicy": restart_policy, "template": template}


def gang_members(spec: JobSpec) -> int:
    """How many pods the gang waits for before it places any (PodGroup ``minMember``,
    ``schedulingPolicy.minAvailable``). For an MPIJob only the workers: mpi-operator
    creates the launcher once every worker is Ready (``WaitForWorkersReady``), so a
    gang that counted the launcher would wait for a pod that waits for the gang
    (operator-contract.md §3.5, §11.1)."""
    g = spec.gang
    if g is not None and g.min_available:
        return g.min_available
    shape = spec.shape
    if shape.job_kind.name == "MPIJob" and shape.count("Worker"):
        return shape.count("Worker")
    return shape.total


def run_policy(spec: JobSpec) -> dict[str, Any]:
    """cleanPodPolicy defaults to Running, not the operators' None: PS pods never exit (§1.6)."""
    rp: dict[str, Any] = {
        "cleanPodPolicy": (spec.clean_pod_policy.value if spec.clean_pod_policy else "Running")
    }
    if spec.ttl_seconds_after_finished is not None:
        rp["ttlSecondsAfterFinished"] = spec.ttl_seconds_after_finished
    if spec.active_deadline_seconds is not None:
        rp["activeDeadlineSeconds"] = spec.active_deadline_seconds
    # Always written: the operators' default is unlimited, so a crash loop would never end.
    rp["backoffLimit"] = spec.effective_backoff_limit
    if spec.gang is not None:
        g = spec.gang
        sp: dict[str, Any] = {"minAvailable": gang_members(spec)}
        if g.queue:
            sp["queue"] = g.queue
        if g.priority_class:
            sp["priorityClass"] = g.priority_class
        if g.schedule_timeout_seconds is not None:
            sp["scheduleTimeoutSeconds"] = g.schedule_timeout_seconds
        rp["schedulingPolicy"] = sp
    return rp


def replica_specs(
    spec: JobSpec, code: Code, command_of: Callable[[str], Sequence[str] | None]
) -> dict[str, Any]:
    """The replica map of a kubeflow.org kind: one spec per role, each with the
    container the operator looks for (running ``command_of(role)``; None: the image's
    own), its named port where the kind declares one, and the role's restart policy
    (the kind's default unless the spec sets one)."""
    kind = spec.shape.job_kind
    replicas = {}
    for role, n in spec.shape.counts.items():
        c = container(
            spec, role, kind.container(role), code.image, command_of(role), code.configmap
        )
        if kind.port is not None:
            c["ports"] = [{"name": kind.port[0], "containerPort": kind.port[1]}]
        template = pod_template(spec, role, [c], code)
        policy = restart_policy(spec, kind.default_restart(role).value)
        replicas[role] = replica_spec(n, policy, template)
    return replicas


def job_object(spec: JobSpec, code: Code, body: dict[str, Any]) -> dict[str, Any]:
    """The job object of ``spec``'s kind around its ``spec`` body."""
    kind = spec.shape.job_kind
    return {
        "apiVersion": kind.api_version,
        "kind": kind.name,
        "metadata": metadata(spec, code.digest),
        "spec": body,
    }
