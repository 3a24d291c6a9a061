"""Path routing for the API double, plus the endpoints that are not plain CRUD:
discovery, SelfSubjectAccessReview, pod logs and reading a CRD."""

from __future__ import annotations

import datetime
import time
from typing import TYPE_CHECKING, Any

from . import errors as E
from .resources import CRDS, METRICS

if TYPE_CHECKING:
    from .server import Handler


def flag(q: dict[str, str], key: str) -> bool:
    """A boolean query parameter as the API server parses it (Go's ParseBool): older
    clients send ``True``, newer ones ``true``."""
    return q.get(key) in ("1", "t", "T", "true", "True", "TRUE")


def route(h: Handler, method: str, path: str, q: dict[str, str]) -> None:
    cat = h.state.catalog
    parts = [p for p in path.split("/") if p]
    if path == "/version":
        return h._send(200, {"major": "1", "minor": "33", "gitVersion": "v1.33.0-apidouble"})
    if path == "/api":
        return h._send(200, cat.api_versions())
    if path == "/apis":
        return h._send(200, cat.group_list())
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise E.page_not_found()
    if not rest:
        doc = cat.resource_list(group, version)
        if doc is None:
            raise E.page_not_found()
        return h._send(200, doc)
    if (group, rest) == ("authorization.k8s.io", ["selfsubjectaccessreviews"]) and method == "POST":
        return access_review(h, h._body() or {})
    ns: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        ns, rest = rest[1], rest[2:]
    plural, name, sub = (
        rest[0],
        (rest[1] if len(rest) > 1 else ""),
        (rest[2] if len(rest) > 2 else ""),
    )
    if (group, version, plural) == (CRDS.group, CRDS.version, CRDS.plural) and name:
        h.authorize("get", CRDS, "", name)  # cluster-scoped: Kubeflow's roles do not grant it
        doc = cat.crd_document(name)
        if doc is None:
            raise E.not_found(CRDS, name)
        return h._send(200, doc)
    res = cat.find(group, version, plural)
    if res is None:
        raise E.page_not_found()
    verb = _verb(method, name, q)
    h.authorize(verb, res, ns or "", name, sub)
    if sub == "log" and res.plural == "pods":
        return pod_log(h, ns or "", name, q)
    if not name:
        if method == "GET":
            return h.do_list(res, ns, q)
        if method == "POST":
            return h.do_create(res, ns or "", h._body() or {}, q)
        raise E.ApiError(405, E.status(405, "MethodNotAllowed", f"{method} not allowed"))
    if res is METRICS:
        raise E.not_found(res, name)
    if method == "GET":
        obj = h.state.store.get(res.rid, ns or "", name)
        if obj is None:
            raise E.not_found(res, name)
        return h._send(200, obj if sub != "status" else obj)
    if method in ("PUT", "PATCH"):
        return h.do_update(
            res, ns or "", name, sub, h._body(), h.headers.get("Content-Type", ""), q
        )
    if method == "DELETE":
        return h.do_delete(res, ns or "", name, q)
    raise E.ApiError(405, E.status(405, "MethodNotAllowed", f"{method} not allowed"))


def _verb(method: str, name: str, q: dict[str, str]) -> str:
    if method == "GET":
        if not name:
            return "watch" if flag(q, "watch") else "list"
        return "get"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]


def access_review(h: Handler, body: dict[str, Any]) -> None:
    attrs = (body.get("spec") or {}).get("resourceAttributes") or {}
    resource = attrs.get("resource", "")
    if attrs.get("subresource"):
        resource += "/" + attrs["subresource"]
    allowed = h.state.allowed(attrs.get("verb", ""), resource)
    body["status"] = {"allowed": allowed}
    if not allowed:
        body["status"]["reason"] = f"RBAC: no rule grants {attrs.get('verb')} on {resource}"
    body.setdefault("apiVersion", "authorization.k8s.io/v1")
    body.setdefault("kind", "SelfSubjectAccessReview")
    h._send(201, body)


def _stamp(t: float) -> bytes:
    dt = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ").encode()


def pod_log(h: Handler, ns: str, name: str, q: dict[str, str]) -> None:
    """GET .../pods/<name>/log, with the kubelet's answers for waiting containers."""
    store = h.state.store
    pod = store.get("core/v1/pods", ns, name)
    if pod is None:
        raise E.ApiError(
            404,
            E.status(404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"}),
        )
    names = [c["name"] for c in pod["spec"]["containers"]]
    cname = q.get("container") or (names[0] if len(names) == 1 else "")
    if cname not in names:
        raise E.bad_request(
            f"a container name must be specified for pod {name}, choose one of: {names}"
        )
    if not (pod.get("spec") or {}).get("nodeName"):
        # the API server has no kubelet to ask for a pod not yet on a node: an empty
        # location, answered 200 with no body (kubernetes pkg/registry/core/pod/strategy.go)
        return h._send(200, "")
    cs: dict[str, Any] = next(
        (c for c in (pod.get("status") or {}).get("containerStatuses") or [] if c["name"] == cname),
        {},
    )
    previous = flag(q, "previous")
    if previous:
        cid = ((cs.get("lastState") or {}).get("terminated") or {}).get("containerID")
        if not cid:
            raise E.bad_request(
                f'previous terminated container "{cname}" in pod "{name}" not found'
            )
    else:
        cid = cs.get("containerID")
        if not cid:
            waiting = (cs.get("state") or {}).get("waiting") or {}
            reason = waiting.get("reason", "ContainerCreating")
            raise E.bad_request(
                f'container "{cname}" in pod "{name}" is waiting to start: {reason}'
            )
    follow = flag(q, "follow") and not previous
    stream_log(h, cid, follow, q)


def stream_log(h: Handler, cid: str, follow: bool, q: dict[str, str]) -> None:
    store = h.state.store
    buf = store.log_buffer(cid)
    with buf.cond:
        lines = list(buf.lines)
        rotated = buf.rotated
    sent = len(lines)
    lines = lines[rotated:]  # a new request reads the current file only
    if q.get("sinceSeconds"):
        cutoff = time.time() - float(q["sinceSeconds"])
        lines = [ln for ln in lines if ln[0] >= cutoff]
    if q.get("sinceTime"):
        # the API server passes sinceTime on in whole seconds (kubernetes
        # pkg/registry/core/pod/strategy.go LogLocation): the second's earlier lines come too
        since = datetime.datetime.strptime(q["sinceTime"][:19], "%Y-%m-%dT%H:%M:%S")
        cutoff = since.replace(tzinfo=datetime.timezone.utc).timestamp()
        lines = [ln for ln in lines if ln[0] >= cutoff]
    if q.get("tailLines"):
        n = int(q["tailLines"])
        lines = lines[-n:] if n else []
    stamps = flag(q, "timestamps")

    def fmt(t: float, text: str) -> bytes:
        return (_stamp(t) + b" " if stamps else b"") + text.encode() + b"\n"

    h._start_stream("text/plain")
    if q.get("limitBytes") and not follow:  # the first N bytes of what was selected
        head = b"".join(fmt(t, text) for t, text in lines)[: int(q["limitBytes"])]
        if head:
            h._chunk(head)
        return h._end_stream()
    if lines:  # what is there already goes out in one chunk, as a file read would
        h._chunk(b"".join(fmt(t, text) for t, text in lines))
    while follow and not store.closed:
        with buf.cond:
            new = buf.lines[sent:]
            done = buf.closed
            if not new and not done:
                buf.cond.wait(0.5)
                continue
        if new:
            h._chunk(b"".join(fmt(t, text) for t, text in new))
        sent += len(new)
        if done and not new:
            break
    h._end_stream()
