"""Deletion with owner references, as the garbage collector does it.

``Background`` removes the object at once and its dependents after; ``Foreground``
keeps the object, with ``metadata.deletionTimestamp`` and the ``foregroundDeletion``
finalizer, until every dependent is gone; ``Orphan`` leaves dependents alone. A pod is
not removed at once either: it gets a deletionTimestamp, the kubelet stops its
containers, and only then does the pod leave the store (``Kubelet._reap``).
"""

from __future__ import annotations

from typing import Any

from .resources import Resource
from .store import Store, now_iso

PODS = "core/v1/pods"
FOREGROUND = "foregroundDeletion"


def dependents(store: Store, uid: str) -> list[tuple[str, str, str]]:
    with store.cond:
        return [
            key
            for key, obj in store.objects.items()
            if any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences") or [])
        ]


def mark_deleted(store: Store, rid: str, ns: str, name: str,
                 finalizer: str | None = None) -> dict[str, Any] | None:  # fmt: skip
    def apply(obj: dict[str, Any]) -> None:
        md = obj["metadata"]
        md.setdefault("deletionTimestamp", now_iso())
        if finalizer and finalizer not in (md.get("finalizers") or []):
            md["finalizers"] = [*(md.get("finalizers") or []), finalizer]

    return store.mutate(rid, ns, name, apply)


def cascade_delete(
    store: Store, res: Resource, ns: str, name: str, policy: str
) -> dict[str, Any] | None:
    """Delete (res, ns, name) under ``policy``; the object as the API server returns it."""
    obj = store.get(res.rid, ns, name)
    if obj is None:
        return None
    if policy == "Orphan":
        return store.delete(res.rid, ns, name)
    uid = obj["metadata"]["uid"]
    if policy == "Foreground" and dependents(store, uid):
        marked = mark_deleted(store, res.rid, ns, name, FOREGROUND)
        _delete_tree(store, uid)
        return marked
    if res.rid == PODS:
        return mark_deleted(store, PODS, ns, name)
    gone = store.delete(res.rid, ns, name)
    _delete_tree(store, uid)
    return gone


def _delete_tree(store: Store, uid: str) -> None:
    for rid, ns, name in dependents(store, uid):
        child = store.get(rid, ns, name)
        if child is None or child["metadata"].get("deletionTimestamp"):
            continue
        if rid == PODS:
            mark_deleted(store, PODS, ns, name)
        else:
            store.delete(rid, ns, name)
            _delete_tree(store, child["metadata"]["uid"])


def sweep(store: Store) -> None:
    """Finish foreground deletions whose dependents are all gone."""
    with store.cond:
        waiting = [(key, obj["metadata"]["uid"]) for key, obj in store.objects.items()
                   if FOREGROUND in (obj["metadata"].get("finalizers") or [])]  # fmt: skip
    for (rid, ns, name), uid in waiting:
        if not dependents(store, uid):
            store.delete(rid, ns, name)
