"""Submitting one job: pre-flight, ship the code, create the objects, own them.

Order matters for "nothing lost": every check runs before the first write; the
ConfigMap and Secret are created before the job (its pods mount them) and removed
again if the job is refused; after the job exists they get an ownerReference to it,
so deleting the job deletes them.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...config import Config
from ...manifests import ANNOTATION_SPEC, CODE_DIR, RESOURCES, build_manifests, common
from ...models import CodeBundle, JobSpec
from ...strategies import get_strategy
from . import notebook, preflight, shipping
from .connection import Connection
from .errors import from_api_exception, map_api_error
from .status import ANNOTATION_WARNINGS

log = logging.getLogger(__name__)
IMAGE_REPO = "jupyter-ddl"


@dataclass
class Submitted:
    job: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    image: str = ""
    pushed: bool = False


def _image(cfg: Config, spec: JobSpec, bundle: CodeBundle) -> tuple[str, bool, bool]:
    """(image, shipped inside it, pushed now). With a registry the bundle is appended
    to the base as a layer; without one the base runs the code from a ConfigMap."""
    framework = get_strategy(spec.strategy).framework
    base = spec.image or cfg.base_images.get(framework) or cfg.base_images["pytorch"]
    if not cfg.registry:
        return base, False, False
    from ...image.builder import build_and_push

    built = build_and_push(
        bundle, base=base, target_repo=f"{cfg.registry.rstrip('/')}/{IMAGE_REPO}", config=cfg
    )
    return built.pull_ref, True, built.pushed


def _notebook_pod(conn: Connection) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The notebook's own pod and the namespace's PodDefaults, when in a Kubeflow notebook."""
    from kubernetes.client import ApiException

    if not conn.pod_name:
        return None, []
    try:
        pod = conn.api.sanitize_for_serialization(
            conn.client("CoreV1Api").read_namespaced_pod(conn.pod_name, conn.namespace)
        )
    except ApiException:
        return None, []
    try:
        pds = conn.client("CustomObjectsApi").list_namespaced_custom_object(
            "kubeflow.org", "v1alpha1", conn.namespace, "poddefaults"
        )
    except ApiException:
        pds = {"items": []}  # PodDefault CRD absent: nothing to copy
    return pod, pds.get("items") or []


def _gpu_asks(spec: JobSpec) -> dict[str, tuple[int, int]]:
    shape = spec.shape
    return {role: (n, shape.resources[role].gpu) for role, n in shape.counts.items()}


def submit(
    conn: Connection,
    cfg: Config,
    spec: JobSpec,
    bundle: CodeBundle,
    environ: Mapping[str, str] | None = None,
) -> Submitted:
    """Create the job; raises the errors of ``Backend.submit``."""
    from kubernetes.client import ApiException

    spec = dataclasses.replace(spec, namespace=spec.namespace or conn.namespace)
    kind = spec.shape.kind
    api_version, plural = RESOURCES[kind]
    group, version = preflight.split_api_version(api_version)
    co, core = conn.client("CustomObjectsApi"), conn.client("CoreV1Api")
    ns = spec.namespace or conn.namespace

    # -- checks: nothing is written before all of them pass --------------------------
    preflight.check_crd(conn, kind, api_version, plural)
    preflight.check_access(conn, api_version, plural)
    try:
        co.get_namespaced_custom_object(group, version, ns, plural, spec.name)
        raise map_api_error(409, None, action=f"submitting {kind}", name=spec.name)
    except ApiException as e:
        if e.status != 404:
            raise from_api_exception(
                e,
                action=f"submitting {kind}",
                kind=kind,
                group_version=api_version,
                name=spec.name,
                namespace=ns,
            ) from e
    pod, poddefaults = _notebook_pod(conn)
    spec = notebook.with_notebook_volumes(spec, pod)
    labels = common.our_labels(spec, bundle.digest)
    secret = shipping.secret(spec, environ if environ is not None else os.environ, labels)
    warnings = preflight.gpu_warnings(conn, _gpu_asks(spec))
    if spec.image and cfg.registry:
        preflight.check_image(cfg, spec.image)
    image, in_image, pushed = _image(cfg, spec, bundle)
    cm = None if in_image else shipping.configmap(bundle, spec.name, labels)

    objs = build_manifests(
        spec,
        image=image,
        command=["python", f"{CODE_DIR}/{bundle.entrypoint}"],
        code_digest=bundle.digest,
        code_configmap=cm["metadata"]["name"] if cm else None,
        code_paths=sorted(bundle.files) if cm else None,
    )
    job, extras = objs[0], objs[1:]
    notes = job["metadata"].setdefault("annotations", {})
    notes[ANNOTATION_SPEC] = json.dumps(spec.to_dict(), sort_keys=True)
    if warnings:
        notes[ANNOTATION_WARNINGS] = json.dumps(warnings)
    if pod is not None:
        notebook.add_template_labels(job, notebook.poddefault_labels(pod, poddefaults))

    # -- writes ----------------------------------------------------------------------
    created_aux: list[tuple[str, str]] = []
    try:
        if cm:
            core.create_namespaced_config_map(ns, cm)
            created_aux.append(("configmap", cm["metadata"]["name"]))
        if secret:
            core.create_namespaced_secret(ns, secret)
            created_aux.append(("secret", secret["metadata"]["name"]))
        made = co.create_namespaced_custom_object(group, version, ns, plural, job)
    except ApiException as e:
        _cleanup(conn, ns, created_aux)
        raise from_api_exception(
            e,
            action=f"submitting {kind}",
            kind=kind,
            group_version=api_version,
            name=spec.name,
            verb="create",
            resource=plural,
            namespace=ns,
        ) from e
    owner = shipping.owner_reference(made)
    for what, name in created_aux:
        patch = {"metadata": {"ownerReferences": [owner]}}
        try:
            if what == "configmap":
                core.patch_namespaced_config_map(name, ns, patch)
            else:
                core.patch_namespaced_secret(name, ns, patch)
        except ApiException as e:  # the job runs anyway; only the cleanup is manual
            log.warning("could not make %s %s owned by %s: %s", what, name, spec.name, e.reason)
    for extra in extras:  # the PodGroup for gang scheduling
        extra["metadata"]["ownerReferences"] = [owner]
        g, _, v = extra["apiVersion"].rpartition("/")
        try:
            co.create_namespaced_custom_object(g, v, ns, extra["kind"].lower() + "s", extra)
        except ApiException as e:
            warnings.append(
                f"could not create {extra['kind']} {spec.name} ({e.status} {e.reason}): gang scheduling is off"
            )
    return Submitted(made, warnings, image, pushed)


def _cleanup(conn: Connection, ns: str, created: list[tuple[str, str]]) -> None:
    from kubernetes.client import ApiException

    core = conn.client("CoreV1Api")
    for what, name in created:
        try:
            (
                core.delete_namespaced_config_map
                if what == "configmap"
                else core.delete_namespaced_secret
            )(name, ns)
        except ApiException:
            log.warning("could not remove %s %s after a refused submit", what, name)
