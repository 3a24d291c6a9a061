"""A TrainJob's own TrainingRuntime: where its backoff limit and restart policy live.

No TrainJob field of Trainer v2.0 to v2.3 reaches a Job's ``backoffLimit`` or its pods'
``restartPolicy``: ``podSpecOverrides`` (v2.0), ``podTemplateOverrides`` (v2.1) and
``runtimePatches`` (v2.2 on) carry pod-spec fields and pod metadata only, and neither
field is among them (operator-contract.md §11.8). Both live in the runtime's JobSet
template, so a job that asks for either runs on a namespaced copy of the runtime it
names, with those two values written into every replicated Job. The copy is made
from the runtime as the cluster stores it, so the layout stays the runtime's. Trainer
v2.0 also needs one for pod metadata: its ``podSpecOverrides`` has none, so the Istio
opt-out and our labels reach its pods only through the runtime (§11.10).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from jupyter_ddl.core.kinds import TRAINJOB, TrainJobKind
from jupyter_ddl.core.shape import is_trainjob
from jupyter_ddl.manifests.common import ISTIO_INJECT
from jupyter_ddl.models import JobSpec, RestartPolicy

KIND = "TrainingRuntime"
PLURAL = "trainingruntimes"
#: the pod restart policies a Job accepts (batch/v1 validation refuses the others)
JOB_RESTART_POLICIES = (RestartPolicy.ON_FAILURE, RestartPolicy.NEVER)
#: what JobSet gives a Job's pods that say nothing (sigs.k8s.io/jobset v0.12.0
#: ``pkg/webhooks/jobset_webhook.go``, ``Default``)
JOBSET_DEFAULT_RESTART = RestartPolicy.ON_FAILURE
#: the Job controller's default ``backoffLimit``, which every Trainer runtime leaves
JOB_DEFAULT_BACKOFF_LIMIT = 6


#: set by the backend when it made the TrainJob's own runtime though nothing asked for
#: one: Trainer v2.0 carries pod metadata only there (§11.10)
OWN_RUNTIME_OPTION = "own_runtime"


def asks_runtime_settings(spec: JobSpec) -> bool:
    """A TrainJob that asks for a backoff limit or a restart policy."""
    return is_trainjob(spec) and (spec.backoff_limit is not None or spec.restart_policy is not None)


def wants_pod_metadata(spec: JobSpec) -> bool:
    """A TrainJob whose release has no override field for pod labels and annotations
    (v2.0's ``podSpecOverrides``), so the Istio opt-out and our labels need a runtime."""
    kind = spec.shape.job_kind if is_trainjob(spec) else None
    return isinstance(kind, TrainJobKind) and kind.release.override_field == "podSpecOverrides"


def needs_own_runtime(spec: JobSpec) -> bool:
    """Does the TrainJob name a runtime of its own (asked for, or made for v2.0)?"""
    return asks_runtime_settings(spec) or bool(spec.backend_options.get(OWN_RUNTIME_OPTION))


def name_for(job: str) -> str:
    """The copy's name: the job's, so ``%ddl delete`` and the owner reference find it."""
    return job


def restart_policy(spec: JobSpec) -> RestartPolicy:
    """The pod restart policy of every Job of the TrainJob."""
    return spec.restart_policy if spec.restart_policy is not None else JOBSET_DEFAULT_RESTART


def backoff_limit(spec: JobSpec) -> int:
    """The ``backoffLimit`` every Job of the TrainJob runs under: the spec's (with the
    product's default when only a restart policy was asked), else the Job default."""
    if asks_runtime_settings(spec):
        return spec.effective_backoff_limit
    return JOB_DEFAULT_BACKOFF_LIMIT


def build(spec: JobSpec, runtime: Mapping[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    """The namespaced copy of ``runtime`` (a ClusterTrainingRuntime or TrainingRuntime
    object as read): every replicated Job's pods carry our labels, the spec's
    annotations and the Istio opt-out (§8), and, when asked, the backoff limit and
    restart policy."""
    body = copy.deepcopy(dict(runtime.get("spec") or {}))
    rjobs = ((body.get("template") or {}).get("spec") or {}).get("replicatedJobs") or []
    for rjob in rjobs:
        jspec = rjob.setdefault("template", {}).setdefault("spec", {})
        tmpl = jspec.setdefault("template", {})
        md = tmpl.setdefault("metadata", {})
        md["labels"] = {**(md.get("labels") or {}), **labels}
        md["annotations"] = {
            **(md.get("annotations") or {}),
            **spec.annotations,
            ISTIO_INJECT: "false",
        }
        if asks_runtime_settings(spec):
            jspec["backoffLimit"] = backoff_limit(spec)
            tmpl.setdefault("spec", {})["restartPolicy"] = restart_policy(spec).value
    theirs = (runtime.get("metadata") or {}).get("labels") or {}
    return {
        "apiVersion": f"{TRAINJOB.group}/{TRAINJOB.version}",
        "kind": KIND,
        "metadata": {
            "name": name_for(spec.name),
            "namespace": spec.namespace,
            # the runtime's own labels (the framework label the SDK lists by) and ours
            "labels": {**theirs, **labels},
        },
        "spec": body,
    }
