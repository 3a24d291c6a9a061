"""A job's side objects (its ConfigMap, Secret, PodGroup, TrainingRuntime): created
strictly before the job, made owned by it once it exists, removed again when the job
is refused."""

from __future__ import annotations

import logging
from typing import Any

from jupyter_ddl.backends.kubernetes.api_errors import from_api_exception
from jupyter_ddl.backends.kubernetes.connection import Connection
from jupyter_ddl.backends.kubernetes.objects import STRICT

log = logging.getLogger(__name__)


def _api_for(conn: Connection, obj: dict[str, Any]) -> tuple[Any, str]:
    """(API client, plural) of a ConfigMap, Secret or custom object."""
    kind = obj["kind"]
    if kind in ("ConfigMap", "Secret"):
        return conn.client("CoreV1Api"), kind.lower() + "s"
    return conn.client("CustomObjectsApi"), kind.lower() + "s"


def create_aux(conn: Connection, obj: dict[str, Any]) -> None:
    """Create a ConfigMap, Secret or PodGroup of the job (strict)."""
    from kubernetes.client import ApiException

    api, plural = _api_for(conn, obj)
    try:
        if obj["kind"] == "ConfigMap":
            api.create_namespaced_config_map(conn.namespace, obj, field_validation=STRICT)
        elif obj["kind"] == "Secret":
            api.create_namespaced_secret(conn.namespace, obj, field_validation=STRICT)
        else:
            group, _, version = obj["apiVersion"].rpartition("/")
            api.create_namespaced_custom_object(group, version, conn.namespace, plural, obj,
                                                field_validation=STRICT)  # fmt: skip
    except ApiException as e:
        raise from_api_exception(
            e,
            action=f"creating {obj['kind']} {obj['metadata']['name']}",
            name=obj["metadata"]["name"],
            verb="create",
            resource=plural,
            namespace=conn.namespace,
        ) from e


def own(conn: Connection, obj: dict[str, Any], owner: dict[str, Any], job: str) -> None:
    """Make ``obj`` owned by the job, so deleting the job deletes it."""
    from kubernetes.client import ApiException

    api, plural = _api_for(conn, obj)
    name, patch = obj["metadata"]["name"], {"metadata": {"ownerReferences": [owner]}}
    try:
        if obj["kind"] == "ConfigMap":
            api.patch_namespaced_config_map(name, conn.namespace, patch)
        elif obj["kind"] == "Secret":
            api.patch_namespaced_secret(name, conn.namespace, patch)
        else:
            group, _, version = obj["apiVersion"].rpartition("/")
            api.patch_namespaced_custom_object(group, version, conn.namespace, plural, name, patch)
    except ApiException as e:  # the job runs anyway; only the cleanup is manual
        log.warning("could not make %s %s owned by %s: %s", obj["kind"], name, job, e.reason)


def cleanup(conn: Connection, created: list[dict[str, Any]]) -> None:
    from kubernetes.client import ApiException

    for obj in created:
        api, plural = _api_for(conn, obj)
        name = obj["metadata"]["name"]
        try:
            if obj["kind"] == "ConfigMap":
                api.delete_namespaced_config_map(name, conn.namespace)
            elif obj["kind"] == "Secret":
                api.delete_namespaced_secret(name, conn.namespace)
            else:
                group, _, version = obj["apiVersion"].rpartition("/")
                api.delete_namespaced_custom_object(group, version, conn.namespace, plural, name)
        except ApiException:
            log.warning("could not remove %s %s after a refused submit", obj["kind"], name)
