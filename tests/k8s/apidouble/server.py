"""The HTTP face of the API double: real Kubernetes REST paths on 127.0.0.1, so the
official ``kubernetes`` client talks to it unchanged (CRUD, merge patches, status,
watches with resourceVersion and 410, pod logs with follow/previous/tail/since,
discovery, SelfSubjectAccessReview, metrics.k8s.io)."""

from __future__ import annotations

import copy
import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlparse

from . import errors as E
from .policy import Policy
from .resources import METRICS, Catalog, Resource
from .routes import flag
from .store import Gone, Store
from .writes import create_object, update_object

USER = "system:serviceaccount:team-a:default-editor"


class State:
    """Everything a request handler needs; tests tune ``denied`` and ``catalog``."""

    def __init__(self, store: Store, catalog: Catalog, policy: Policy | None = None) -> None:
        self.store = store
        self.catalog = catalog
        self.policy = policy or Policy()
        self.denied: set[tuple[str, str]] = set()  # (verb, "pods/log")
        self.delay = 0.0  # seconds added to every request: a cluster that far away
        self.requests: list[tuple[str, str]] = []
        self.pod_metrics: Any = None  # callable(ns, pod) -> {container: usage} | None
        self.streams: set[Any] = set()  # sockets of open watches and log follows
        # resource id -> how many of its next list answers come mangled (no
        # metadata.resourceVersion), as a broken proxy in the way would send them
        self.garbled: dict[str, int] = {}
        self.lock = threading.Lock()

    def take_garbled(self, rid: str) -> bool:
        with self.lock:
            left = self.garbled.get(rid, 0)
            if left:
                self.garbled[rid] = left - 1
        return left > 0

    def drop_streams(self) -> int:
        """Cut every open watch and log stream, as a flaky network or an API server
        restart would; returns how many were cut."""
        import socket

        with self.lock:
            socks, self.streams = list(self.streams), set()
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        return len(socks)

    def allowed(self, verb: str, resource: str) -> bool:
        return (verb, resource) not in self.denied and ("*", resource) not in self.denied


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def json_patch(target: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent: Any = target
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent.setdefault(p, {})
        last = parts[-1]
        if op["op"] in ("add", "replace"):
            if isinstance(parent, list):
                parent.append(op["value"]) if last == "-" else parent.insert(int(last), op["value"])
            else:
                parent[last] = op["value"]
        elif op["op"] == "remove":
            parent.pop(int(last) if isinstance(parent, list) else last, None)
    return target


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: State  # set on the subclass made by serve()

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # -- plumbing ----------------------------------------------------------------
    def _send(self, code: int, body: Any, warnings: list[str] | None = None) -> None:
        if isinstance(body, str):
            data, ctype = body.encode(), "text/plain; charset=utf-8"
        else:
            data, ctype = json.dumps(body).encode(), "application/json"
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        for text in warnings or []:  # RFC 7234 warn-code 299, as the API server sends them
            escaped = text.replace('"', '\\"')
            self.send_header("Warning", f'299 - "{escaped}"')
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self, ctype: str) -> None:
        with self.state.lock:
            self.state.streams.add(self.connection)
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _body(self) -> Any:
        return json.loads(self._raw) if self._raw else None

    def _dispatch(self, method: str) -> None:
        # read the whole body first: a request refused early must not leave it in the
        # keep-alive connection, where it would garble the next request
        n = int(self.headers.get("Content-Length") or 0)
        self._raw = self.rfile.read(n) if n else b""
        url = urlparse(self.path)
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        with self.state.lock:
            self.state.requests.append((method, self.path))
        if self.state.delay > 0:  # a round trip's network time, paid by every request
            time.sleep(self.state.delay)
        try:
            from .routes import route

            route(self, method, url.path.rstrip("/"), q)
        except E.ApiError as e:
            self._send(e.code, e.body)
        except OSError:  # the client went away, or drop_streams() cut the connection
            pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # -- verbs ---------------------------------------------------------------------
    def authorize(self, verb: str, res: Resource, ns: str, name: str = "", sub: str = "") -> None:
        rname = f"{res.plural}/{sub}" if sub else res.plural
        if not self.state.allowed(verb, rname):
            raise E.forbidden(USER, verb, rname, res.group, ns, name)

    def do_list(self, res: Resource, ns: str | None, q: dict[str, str]) -> None:
        if res is METRICS:
            return self._send(200, self._metrics(ns or "", q))
        if flag(q, "watch"):
            return self.do_watch(res, ns, q)
        if self.state.take_garbled(res.rid):
            return self._send(200, {"kind": f"{res.kind}List", "items": []})
        items, rv = self.state.store.list(
            res.rid, ns, q.get("labelSelector"), q.get("fieldSelector")
        )
        for it in items:
            it.setdefault("apiVersion", res.api_version)
            it.setdefault("kind", res.kind)
        self._send(
            200,
            {
                "kind": f"{res.kind}List",
                "apiVersion": res.api_version,
                "metadata": {"resourceVersion": rv},
                "items": items,
            },
        )

    def do_watch(self, res: Resource, ns: str | None, q: dict[str, str]) -> None:
        from .store import fields_match, labels_match, parse_label_selector

        store, sel = self.state.store, parse_label_selector(q.get("labelSelector"))
        deadline = time.monotonic() + float(q.get("timeoutSeconds") or 1800)

        def wanted(obj: dict[str, Any]) -> bool:
            md = obj.get("metadata", {})
            return (
                (ns is None or md.get("namespace", "") == ns)
                and labels_match(md.get("labels") or {}, sel)
                and fields_match(obj, q.get("fieldSelector"))
            )

        self._start_stream("application/json")
        since = int(q.get("resourceVersion") or 0)
        if not since:  # "0"/absent: synthetic ADDED for what exists, then changes
            items, rv = store.list(res.rid, ns, q.get("labelSelector"), q.get("fieldSelector"))
            for it in items:
                self._chunk(json.dumps({"type": "ADDED", "object": it}).encode() + b"\n")
            since = int(rv)
        epoch = store.epoch
        while time.monotonic() < deadline and not store.closed:
            try:
                if store.epoch != epoch:
                    raise Gone(since)
                events = store.events_since(res.rid, since)
            except Gone:
                self._chunk(
                    json.dumps({"type": "ERROR", "object": E.gone(since, store.rv)}).encode()
                    + b"\n"
                )
                break
            for at, etype, obj in events:
                since = at
                if wanted(obj):
                    obj.setdefault("apiVersion", res.api_version)
                    obj.setdefault("kind", res.kind)
                    self._chunk(json.dumps({"type": etype, "object": obj}).encode() + b"\n")
            if not events:
                store.wait(min(0.5, max(0.0, deadline - time.monotonic())))
        self._end_stream()

    def _metrics(self, ns: str, q: dict[str, str]) -> dict[str, Any]:
        pods, _ = self.state.store.list("core/v1/pods", ns, q.get("labelSelector"))
        items = []
        for p in pods:
            usage = (
                self.state.pod_metrics(ns, p["metadata"]["name"])
                if self.state.pod_metrics
                else None
            )
            if usage:
                items.append(
                    {
                        "metadata": {"name": p["metadata"]["name"], "namespace": ns},
                        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "window": "10s",
                        "containers": [{"name": c, "usage": u} for c, u in usage.items()],
                    }
                )
        return {
            "kind": "PodMetricsList",
            "apiVersion": METRICS.api_version,
            "metadata": {},
            "items": items,
        }

    def do_create(self, res: Resource, ns: str, body: dict[str, Any], q: dict[str, str]) -> None:
        obj, warnings = create_object(
            self.state.store, self.state.policy, res, ns, body, q.get("fieldValidation", "Ignore")
        )
        self._send(201, obj, warnings)

    def do_update(self, res: Resource, ns: str, name: str, sub: str, body: Any, ctype: str,
                  q: dict[str, str]) -> None:  # fmt: skip
        store = self.state.store
        cur = store.get(res.rid, ns, name)
        if cur is None:
            raise E.not_found(res, name)
        if ctype.startswith("application/json-patch"):
            new = json_patch(copy.deepcopy(cur), body)
        elif body is not None and self.command == "PATCH":
            new = merge_patch(cur, body)
        else:
            new = body
        obj, warnings = update_object(store, res, cur, new, sub, q.get("fieldValidation", "Ignore"))
        self._send(200, obj, warnings)

    def do_delete(self, res: Resource, ns: str, name: str, q: dict[str, str]) -> None:
        from .gc import cascade_delete

        body = self._body() or {}
        policy = body.get("propagationPolicy") or q.get("propagationPolicy") or "Background"
        grace = body.get("gracePeriodSeconds", q.get("gracePeriodSeconds"))
        obj = cascade_delete(
            self.state.store, res, ns, name, policy, None if grace is None else int(grace)
        )
        if obj is None:
            raise E.not_found(res, name)
        self._send(200, obj)
