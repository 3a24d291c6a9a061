"""One job kind's objects in one namespace, through ``CustomObjectsApi``.

Every call names the kind's group, version and plural from the kind (``kinds.py``), and
every API error is mapped here, once, with the kind, the namespace and what we were
doing. Every create asks for ``fieldValidation=Strict``: a field the cluster's CRD does
not know is then refused (400, one line naming it) instead of silently dropped
(operator-contract.md §10.17).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jupyter_ddl.backends.kubernetes.api_errors import from_api_exception
from jupyter_ddl.backends.kubernetes.connection import Connection
from jupyter_ddl.core.kinds import Kind

STRICT = "Strict"


class CustomObjects:
    def __init__(self, conn: Connection, kind: Kind, *, written_for: str | None = None) -> None:
        self.conn, self.kind, self.written_for = conn, kind, written_for
        self.api = conn.client("CustomObjectsApi")

    @property
    def namespace(self) -> str:
        return self.conn.namespace

    def _error(self, e: Any, action: str, verb: str, name: str | None = None) -> Exception:
        return from_api_exception(
            e,
            action=action,
            kind=self.kind,
            name=name,
            verb=verb,
            resource=self.kind.plural,
            namespace=self.namespace,
            written_for=self.written_for,
        )

    def get(self, name: str) -> dict[str, Any] | None:
        """The object, or None when there is none (or its CRD is not served)."""
        from kubernetes.client import ApiException

        k = self.kind
        try:
            obj: dict[str, Any] = self.api.get_namespaced_custom_object(
                k.group, k.version, self.namespace, k.plural, name
            )
        except ApiException as e:
            if e.status == 404:
                return None
            raise self._error(e, f"reading {k} {name}", "get", name) from e
        return obj

    def list(self, selector: str | None = None) -> list[dict[str, Any]] | None:
        """The objects matching ``selector``; None when the kind's CRD is not served."""
        from kubernetes.client import ApiException

        k = self.kind
        try:
            found = self.api.list_namespaced_custom_object(
                k.group, k.version, self.namespace, k.plural, label_selector=selector or ""
            )
        except ApiException as e:
            if e.status == 404:
                return None
            raise self._error(e, f"listing {k}s", "list") from e
        return list(found.get("items") or [])

    def list_fn(self) -> Callable[..., Any]:
        """The raw list call, for a list+watch that reads the stream itself."""
        k = self.kind

        def call(**kw: Any) -> Any:
            return self.api.list_namespaced_custom_object(
                k.group, k.version, self.namespace, k.plural, **kw
            )

        return call

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        from kubernetes.client import ApiException

        k, name = self.kind, obj["metadata"]["name"]
        try:
            made: dict[str, Any] = self.api.create_namespaced_custom_object(
                k.group, k.version, self.namespace, k.plural, obj, field_validation=STRICT
            )
        except ApiException as e:
            raise self._error(e, f"submitting {k}", "create", name) from e
        return made

    def patch(self, name: str, patch: dict[str, Any], action: str) -> dict[str, Any]:
        from kubernetes.client import ApiException

        k = self.kind
        try:
            out: dict[str, Any] = self.api.patch_namespaced_custom_object(
                k.group, k.version, self.namespace, k.plural, name, patch
            )
        except ApiException as e:
            raise self._error(e, action, "patch", name) from e
        return out

    def delete(self, name: str) -> bool:
        """Delete as the kind wants it (the pods first, but for a TrainJob); False when
        it was gone."""
        from kubernetes import client
        from kubernetes.client import ApiException

        k = self.kind
        try:
            self.api.delete_namespaced_custom_object(
                k.group, k.version, self.namespace, k.plural, name,
                body=client.V1DeleteOptions(propagation_policy=k.delete_propagation()),
            )  # fmt: skip
        except ApiException as e:
            if e.status == 404:
                return False
            raise self._error(e, f"deleting {name}", "delete", name) from e
        return True
