"""What a job inherits from the Kubeflow notebook it was submitted from (pure).

PodDefaults (``kubeflow.org/v1alpha1``) inject credentials, volumes and env into pods
whose labels match their selector; the notebook pod carries those labels, so copying
the matching labels onto the replicas gives them the same injections. The notebook's
PVCs can be named in ``--volume CLAIM`` with no path: they get the notebook's path.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jupyter_ddl.errors import ValidationError
from jupyter_ddl.i18n import tr
from jupyter_ddl.models import JobSpec


def _matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    wanted = selector.get("matchLabels") or {}
    if not wanted and not selector.get("matchExpressions"):
        return False  # an empty selector would select everything: never copy on that
    if any(labels.get(k) != v for k, v in wanted.items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        have = labels.get(expr.get("key", ""))
        op, values = expr.get("operator"), expr.get("values") or []
        if (op == "In" and have not in values) or (op == "NotIn" and have in values):
            return False
        if (op == "Exists" and have is None) or (op == "DoesNotExist" and have is not None):
            return False
    return True


def poddefault_labels(pod: dict[str, Any], poddefaults: list[dict[str, Any]]) -> dict[str, str]:
    """The notebook pod's labels that make PodDefaults apply to it."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    out: dict[str, str] = {}
    for pd in poddefaults:
        sel = (pd.get("spec") or {}).get("selector") or {}
        if _matches(sel, labels):
            for key in list(sel.get("matchLabels") or {}) + [
                e.get("key") for e in sel.get("matchExpressions") or []
            ]:
                if key in labels:
                    out[key] = labels[key]
    return out


def claim_paths(pod: dict[str, Any]) -> dict[str, str]:
    """PVC claim name -> where the notebook mounts it."""
    spec = pod.get("spec") or {}
    volumes = {
        v["name"]: (v.get("persistentVolumeClaim") or {}).get("claimName")
        for v in spec.get("volumes") or []
    }
    out = {}
    for c in spec.get("containers") or []:
        for m in c.get("volumeMounts") or []:
            claim = volumes.get(m["name"])
            if claim and claim not in out:
                out[claim] = m["mountPath"]
    return out


def with_notebook_volumes(spec: JobSpec, pod: dict[str, Any] | None) -> JobSpec:
    """``spec`` with every path-less volume given the notebook's mount path."""
    if not any(not v.mount_path for v in spec.volumes):
        return spec
    paths = claim_paths(pod or {})
    volumes = []
    for v in spec.volumes:
        if not v.mount_path:
            if v.claim_name not in paths:
                known = ", ".join(sorted(paths)) or "none"
                raise ValidationError(
                    tr(
                        "volume: the notebook does not mount a PVC named {claim!r} "
                        "(its PVCs: {known}); give a mount path as CLAIM:/path",
                        claim=v.claim_name,
                        known=known,
                    )
                )
            v = dataclasses.replace(v, mount_path=paths[v.claim_name])
        volumes.append(v)
    return dataclasses.replace(spec, volumes=volumes)


def pod_templates(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Every pod template inside a job object: the replica templates of the v1 kinds
    and MPIJob; a TrainJob's pod overrides that carry metadata (``podTemplateOverrides``
    of Trainer v2.1, ``runtimePatches`` from v2.2; v2.0's ``podSpecOverrides`` has no
    pod metadata, operator-contract.md §11.6)."""
    out = []
    spec = job.get("spec") or {}
    for key, value in spec.items():
        if key.endswith("ReplicaSpecs") and isinstance(value, dict):
            out += [
                r["template"] for r in value.values() if isinstance(r, dict) and "template" in r
            ]
    out += [o for o in spec.get("podTemplateOverrides") or [] if isinstance(o, dict)]
    for patch in spec.get("runtimePatches") or []:
        tmpl = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
        for rjob in tmpl.get("replicatedJobs") or []:
            pod = ((rjob.get("template") or {}).get("spec") or {}).get("template")
            if isinstance(pod, dict):
                out.append(pod)
    return out


def add_template_labels(job: dict[str, Any], labels: dict[str, str]) -> None:
    for t in pod_templates(job):
        md = t.setdefault("metadata", {})
        md["labels"] = {**labels, **(md.get("labels") or {})}
