"""Deletion with owner references: what the garbage collector does for dependents
(pods of a job, the ConfigMap and Secrets we own). ``Orphan`` keeps them."""

from __future__ import annotations

from typing import Any

from .resources import Catalog, Resource
from .store import Store


def dependents(store: Store, uid: str) -> list[tuple[str, str, str]]:
    with store.cond:
        return [
            key
            for key, obj in store.objects.items()
            if any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences") or [])
        ]


def cascade_delete(
    store: Store, catalog: Catalog, res: Resource, ns: str, name: str, policy: str
) -> dict[str, Any] | None:
    """Delete (res, ns, name); dependents too unless ``policy`` is Orphan.

    Foreground and Background differ in timing only on a real cluster; here both
    remove dependents first, so a foreground delete returns once they are gone.
    """
    obj = store.get(res.rid, ns, name)
    if obj is None:
        return None
    if policy != "Orphan":
        _delete_tree(store, obj["metadata"]["uid"])
    return store.delete(res.rid, ns, name)


def _delete_tree(store: Store, uid: str) -> None:
    for rid, ns, name in dependents(store, uid):
        child = store.get(rid, ns, name)
        if child is not None:
            _delete_tree(store, child["metadata"]["uid"])
            store.delete(rid, ns, name)
