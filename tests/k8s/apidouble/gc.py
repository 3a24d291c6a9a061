"""Deletion with owner references, as the garbage collector does it.

``Background`` removes the object at once and its dependents after; ``Foreground``
keeps the object, with ``metadata.deletionTimestamp`` and the ``foregroundDeletion``
finalizer, until every dependent is gone; ``Orphan`` leaves dependents alone. A pod on
a node is not removed at once either: as kube-apiserver does (v1.36.3
``pkg/registry/core/pod/strategy.go``, ``CheckGracefulDelete``), it gets a
deletionTimestamp of now plus its grace period (the request's, else the pod's
``terminationGracePeriodSeconds``, 30 by default) and ``deletionGracePeriodSeconds``;
the kubelet stops its containers within that time, and only then does the pod leave the
store (``Kubelet._reap``). A pod on no node, or one that already ended, goes at once.
"""

from __future__ import annotations

import time
from typing import Any

from .resources import Resource
from .store import Store, now_iso

PODS = "core/v1/pods"
FOREGROUND = "foregroundDeletion"
#: the API's default ``terminationGracePeriodSeconds``
DEFAULT_GRACE = 30


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


def pod_grace(pod: dict[str, Any], requested: int | None) -> int:
    """The grace period kube-apiserver gives a pod's deletion: 0 for a pod on no node
    or one that ended, else the request's, else the pod's own (at least 1 when < 0)."""
    spec, phase = pod.get("spec") or {}, (pod.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    if requested is None:
        requested = spec.get("terminationGracePeriodSeconds")
    period = DEFAULT_GRACE if requested is None else int(requested)
    return 1 if period < 0 else period


def delete_pod(
    store: Store, ns: str, name: str, requested: int | None = None
) -> dict[str, Any] | None:
    """A pod's deletion: gone at once when its grace is 0, else marked for the kubelet
    (a second request may shorten the grace, never lengthen it)."""
    pod = store.get(PODS, ns, name)
    if pod is None:
        return None
    grace = pod_grace(pod, requested)
    md = pod["metadata"]
    if md.get("deletionGracePeriodSeconds") is not None:
        grace = min(grace, int(md["deletionGracePeriodSeconds"]))
    if grace == 0:
        return store.delete(PODS, ns, name)

    def apply(obj: dict[str, Any]) -> None:
        due = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + grace))
        obj["metadata"].update(deletionTimestamp=due, deletionGracePeriodSeconds=grace)

    return store.mutate(PODS, ns, name, apply)


def cascade_delete(
    store: Store, res: Resource, ns: str, name: str, policy: str, grace: int | None = None
) -> dict[str, Any] | None:
    """Delete (res, ns, name) under ``policy``; the object as the API server returns it.
    ``grace``: the request's ``gracePeriodSeconds`` (pods only)."""
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
        return delete_pod(store, ns, name, grace)
    gone = store.delete(res.rid, ns, name)
    _delete_tree(store, uid)
    return gone


def _delete_tree(store: Store, uid: str) -> None:
    for rid, ns, name in dependents(store, uid):
        child = store.get(rid, ns, name)
        if child is None or child["metadata"].get("deletionTimestamp"):
            continue
        if rid == PODS:
            delete_pod(store, ns, name)
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
