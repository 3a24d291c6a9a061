"""What Kubeflow Trainer runs on the cluster: its release and its runtimes.

The release decides which TrainJob field reaches the pods (operator-contract.md §4.6).
It is taken, in this order, from config key ``trainer_release``; from the ConfigMap
Trainer v2.2 and later publish for every authenticated user
(``kubeflow-system/kubeflow-trainer-public``); from the TrainJob CRD's fields, where
the CRD is readable; else the newest supported release is assumed, and a strict create
refused for the unknown override field is tried again for the older releases (a
refused create changes nothing).

The runtime a TrainJob names must exist: it is read (ClusterTrainingRuntime, or a
namespaced TrainingRuntime), its layout decides the replicas (``trainer.layout_of``),
and a missing one is refused in one line naming the runtimes the cluster has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jupyter_ddl.backends.kubernetes.api_errors import from_api_exception
from jupyter_ddl.backends.kubernetes.connection import Connection
from jupyter_ddl.config import Config
from jupyter_ddl.core.kinds import TRAINJOB
from jupyter_ddl.core.trainer import (
    NEWEST,
    PUBLIC_CONFIGMAP,
    RELEASES,
    RuntimeLayout,
    layout_of,
    release_from_crd,
    release_named,
    release_of,
)
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.i18n import tr

CRD_NAME = f"{TRAINJOB.plural}.{TRAINJOB.group}"
#: runtimeRef.kind -> its plural; a TrainingRuntime lives in the job's namespace
RUNTIME_PLURALS = {"ClusterTrainingRuntime": "clustertrainingruntimes",
                   "TrainingRuntime": "trainingruntimes"}  # fmt: skip


@dataclass(frozen=True)
class Found:
    """The release a TrainJob is written for, and how it was found."""

    release: str
    source: str
    sure: bool  # False: assumed, so a strict refusal may try older releases

    def describe(self) -> str:
        return f"Trainer {self.release}, {self.source}"

    def fallbacks(self) -> list[str]:
        """Releases to try after this one when the cluster refuses its override field:
        the newest older release of each other field (§4.6)."""
        if self.sure:
            return []
        tried, out = {release_named(self.release).override_field}, []
        for name in reversed(RELEASES):
            r = release_named(name)
            if r.number < release_named(self.release).number and r.override_field not in tried:
                tried.add(r.override_field)
                out.append(name)
        return out


def find_release(conn: Connection, cfg: Config) -> Found:
    """The cluster's Trainer release (see the module's docstring for the order)."""
    if cfg.trainer_release:
        return Found(release_named(cfg.trainer_release).name, "from config trainer_release", True)
    published = _published_version(conn)
    if published and release_of(published):
        return Found(str(release_of(published)), f"published as {published} by Trainer", True)
    crd = _crd(conn)
    if crd is not None and release_from_crd(crd):
        named = str(release_from_crd(crd))
        # v2.2 and v2.3 declare the same fields: both write the same TrainJob
        later = " or later" if release_named(named).deadline else ""
        return Found(
            named, f"{later.strip() + ', ' if later else ''}read from its TrainJob CRD", True
        )
    return Found(
        NEWEST, "assumed (no kubeflow-trainer-public ConfigMap or TrainJob CRD readable)", False
    )


def _published_version(conn: Connection) -> str | None:
    from kubernetes.client import ApiException

    namespace, name, key = PUBLIC_CONFIGMAP
    try:
        cm = conn.client("CoreV1Api").read_namespaced_config_map(name, namespace)
    except ApiException:
        return None  # before v2.2, or not readable: look elsewhere
    return str((cm.data or {}).get(key) or "") or None


def _crd(conn: Connection) -> dict[str, Any] | None:
    from kubernetes.client import ApiException

    try:
        crd = conn.client("ApiextensionsV1Api").read_custom_resource_definition(CRD_NAME)
    except ApiException:
        return None  # cluster-scoped: notebook accounts usually may not read it
    out: dict[str, Any] = conn.api.sanitize_for_serialization(crd)
    return out


def read_runtime(conn: Connection, name: str, kind: str) -> RuntimeLayout | None:
    """The layout of runtime ``name``; ValidationError naming the runtimes the cluster
    has when it has no such one; None when runtimes cannot be read (RBAC)."""
    obj = read_runtime_object(conn, name, kind)
    return None if obj is None else layout_of(obj)


def read_runtime_object(conn: Connection, name: str, kind: str) -> dict[str, Any] | None:
    """Runtime ``name`` as the cluster stores it (errors as ``read_runtime``)."""
    from kubernetes.client import ApiException

    plural = RUNTIME_PLURALS.get(kind)
    if plural is None:
        known = ", ".join(RUNTIME_PLURALS)
        raise ValidationError(
            tr("runtime_kind: {kind!r} is not a runtime kind; use {known}", kind=kind, known=known)
        )
    co = conn.client("CustomObjectsApi")
    g, v = TRAINJOB.group, TRAINJOB.version
    try:
        if kind == "TrainingRuntime":
            obj = co.get_namespaced_custom_object(g, v, conn.namespace, plural, name)
        else:
            obj = co.get_cluster_custom_object(g, v, plural, name)
    except ApiException as e:
        if e.status == 403:
            return None  # cannot look: the TrainJob's own create will tell
        if e.status != 404:
            raise from_api_exception(e, action=f"reading runtime {name}") from e
        have = runtime_names(conn)
        where = (
            tr(" in namespace {namespace}", namespace=conn.namespace)
            if kind == "TrainingRuntime"
            else ""
        )
        if have:
            said = tr(
                "runtime: the cluster has no {kind} {name!r}{where}; it has {have}",
                kind=kind,
                name=name,
                where=where,
                have=", ".join(have),
            )
        else:
            said = tr(
                "runtime: the cluster has no {kind} {name!r}{where}; it has none "
                "(install Trainer's runtimes, or name one with runtime_ref)",
                kind=kind,
                name=name,
                where=where,
            )
        raise ValidationError(said) from None
    return dict(obj)


def runtime_names(conn: Connection) -> list[str]:
    """Every runtime a TrainJob here may name (cluster-wide and this namespace's)."""
    from kubernetes.client import ApiException

    co = conn.client("CustomObjectsApi")
    g, v = TRAINJOB.group, TRAINJOB.version
    names: list[str] = []
    calls: tuple[Callable[[], Any], ...] = (
        lambda: co.list_cluster_custom_object(g, v, RUNTIME_PLURALS["ClusterTrainingRuntime"]),
        lambda: co.list_namespaced_custom_object(g, v, conn.namespace, RUNTIME_PLURALS["TrainingRuntime"]),
    )  # fmt: skip
    for call in calls:
        try:
            names += [o["metadata"]["name"] for o in call().get("items") or []]
        except ApiException:
            continue
    return sorted(set(names))
