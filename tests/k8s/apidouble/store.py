"""The API double's memory: objects by resource, a resourceVersion counter, a bounded
watch history (so a watch from a too-old version gets 410 Gone like etcd compaction),
label/field selectors, and per-container log buffers that a kubelet appends to.

Objects are guarded by one condition variable that watchers wait on. Each container's
log buffer has a condition of its own: a line wakes only the followers of that
container, so a hundred pods writing at once do not wake every stream for every line.
"""

from __future__ import annotations

import builtins
import copy
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

Key = tuple[str, str, str]  # (resource id, namespace or "", name)


class Gone(Exception):
    """The requested resourceVersion is older than the retained history."""


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def parse_label_selector(text: str | None) -> list[tuple[str, str, list[str]]]:
    """``a=b,c!=d,e in (f,g),h,!i`` → [(key, op, values)]."""
    out: list[tuple[str, str, list[str]]] = []
    if not text:
        return out
    parts, depth, cur = [], 0, ""
    for ch in text:  # split on commas outside parentheses
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for p in (p.strip() for p in parts if p.strip()):
        if " notin " in p or " in " in p:
            op = "notin" if " notin " in p else "in"
            k, _, vals = p.partition(f" {op} ")
            out.append((k.strip(), op, [v.strip() for v in vals.strip("() ").split(",")]))
        elif "!=" in p:
            k, _, v = p.partition("!=")
            out.append((k.strip(), "!=", [v.strip()]))
        elif "=" in p:
            k, _, v = p.partition("==" if "==" in p else "=")
            out.append((k.strip(), "=", [v.strip()]))
        elif p.startswith("!"):
            out.append((p[1:], "!", []))
        else:
            out.append((p, "exists", []))
    return out


def labels_match(labels: dict[str, str], selector: list[tuple[str, str, list[str]]]) -> bool:
    for key, op, vals in selector:
        have = labels.get(key)
        if op == "=" and have != vals[0]:
            return False
        if op == "!=" and have == vals[0]:
            return False
        if op == "in" and have not in vals:
            return False
        if op == "notin" and have in vals:
            return False
        if op == "exists" and have is None:
            return False
        if op == "!" and have is not None:
            return False
    return True


def field_lookup(obj: dict[str, Any], path: str) -> Any:
    cur: Any = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return cur


def fields_match(obj: dict[str, Any], text: str | None) -> bool:
    for cond in (text or "").split(","):
        if not cond:
            continue
        neg = "!=" in cond
        k, _, v = cond.partition("!=" if neg else "=")
        v = v.lstrip("=")
        have = field_lookup(obj, k.strip())
        if (str(have) == v) == neg:
            return False
    return True


@dataclass
class LogBuffer:
    """One container's output: (timestamp, line) pairs, closed when it exits."""

    lines: list[tuple[float, str]] = field(default_factory=list)
    closed: bool = False
    #: lines moved aside by the kubelet's log rotation: a new request reads only the
    #: current file, ``lines[rotated:]`` (kubelet ``kuberuntime/logs/logs.go ReadLogs``)
    rotated: int = 0
    cond: threading.Condition = field(default_factory=threading.Condition)


class Store:
    def __init__(self, history: int = 2000) -> None:
        self.cond = threading.Condition()
        self.rv = 1
        self.objects: dict[Key, dict[str, Any]] = {}
        self.history: deque[tuple[int, str, str, dict[str, Any]]] = deque(maxlen=history)
        self.logs: dict[str, LogBuffer] = {}  # by containerID
        self.closed = False
        self.compacted = 0  # watches from before this resourceVersion get 410
        self.epoch = 0  # bumped by expire_watches(): open watches end with 410 Gone
        #: the kubelet's containerLogMaxSize (bytes): 0 rotates only when a test says
        self.log_max_bytes = 0

    # -- objects ---------------------------------------------------------------
    def _bump(self, kind: str, rid: str, obj: dict[str, Any]) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.history.append((self.rv, kind, rid, copy.deepcopy(obj)))
        self.cond.notify_all()

    def create(self, rid: str, obj: dict[str, Any]) -> dict[str, Any]:
        with self.cond:
            md = obj.setdefault("metadata", {})
            key = (rid, md.get("namespace", ""), md["name"])
            if key in self.objects:
                raise KeyError(key)
            md.setdefault("uid", str(uuid.uuid4()))
            md.setdefault("creationTimestamp", now_iso())
            md.setdefault("generation", 1)
            if rid == "core/v1/pods":  # the API server starts every pod Pending
                obj.setdefault("status", {"phase": "Pending", "qosClass": "BestEffort"})
            self.objects[key] = obj
            self._bump("ADDED", rid, obj)
            return copy.deepcopy(obj)

    def get(self, rid: str, ns: str, name: str) -> dict[str, Any] | None:
        with self.cond:
            obj = self.objects.get((rid, ns, name))
            return copy.deepcopy(obj) if obj is not None else None

    def replace(self, rid: str, obj: dict[str, Any]) -> dict[str, Any]:
        with self.cond:
            md = obj["metadata"]
            key = (rid, md.get("namespace", ""), md["name"])
            if key not in self.objects:
                raise LookupError(key)
            self.objects[key] = obj
            self._bump("MODIFIED", rid, obj)
            return copy.deepcopy(obj)

    def mutate(self, rid: str, ns: str, name: str, fn: Any) -> dict[str, Any] | None:
        """Apply ``fn(obj)`` in place under the lock; None if the object is gone."""
        with self.cond:
            obj = self.objects.get((rid, ns, name))
            if obj is None:
                return None
            fn(obj)
            self._bump("MODIFIED", rid, obj)
            return copy.deepcopy(obj)

    def delete(self, rid: str, ns: str, name: str) -> dict[str, Any] | None:
        with self.cond:
            obj = self.objects.pop((rid, ns, name), None)
            if obj is not None:
                self._bump("DELETED", rid, obj)
            return obj

    def list(
        self, rid: str, ns: str | None, labels: str | None = None, fields: str | None = None
    ) -> tuple[list[dict[str, Any]], str]:
        sel = parse_label_selector(labels)
        with self.cond:
            items = [
                copy.deepcopy(o)
                for (r, n, _), o in sorted(self.objects.items())
                if r == rid
                and (ns is None or n == ns)
                and labels_match(o["metadata"].get("labels") or {}, sel)
                and fields_match(o, fields)
            ]
            return items, str(self.rv)

    def events_since(self, rid: str, since: int) -> builtins.list[tuple[int, str, dict[str, Any]]]:
        """History entries of ``rid`` after ``since``; raises Gone when compacted."""
        with self.cond:
            oldest = self.history[0][0] if self.history else self.rv + 1
            full = len(self.history) == self.history.maxlen
            if since and (since < self.compacted or (full and since < oldest - 1)):
                raise Gone(since)
            return [(rv, k, o) for rv, k, r, o in self.history if rv > since and r == rid]

    def compact(self) -> None:
        """Forget the watch history (tests use it to force 410 Gone)."""
        with self.cond:
            self.history.clear()
            self.compacted = self.rv

    def expire_watches(self) -> None:
        """End every open watch with 410 Gone and compact the history, as etcd does."""
        with self.cond:
            self.epoch += 1
        self.compact()

    # -- logs ------------------------------------------------------------------
    def log_buffer(self, cid: str) -> LogBuffer:
        """The buffer of one container (created empty when it has written nothing)."""
        buf = self.logs.get(cid)
        if buf is None:
            with self.cond:
                buf = self.logs.setdefault(cid, LogBuffer())
        return buf

    def log_append(self, cid: str, line: str) -> None:
        buf = self.log_buffer(cid)
        with buf.cond:
            buf.lines.append((time.time(), line))
            # the current file has reached containerLogMaxSize: rotated (a CRI record
            # is the line plus about 40 bytes of time, stream and tag)
            if (
                self.log_max_bytes
                and sum(len(t) + 40 for _, t in buf.lines[buf.rotated :]) >= self.log_max_bytes
            ):
                buf.rotated = len(buf.lines)
            buf.cond.notify_all()

    def log_rotate(self, cid: str) -> int:
        """Rotate a container's log now (the kubelet does at containerLogMaxSize)."""
        buf = self.log_buffer(cid)
        with buf.cond:
            buf.rotated = len(buf.lines)
            return buf.rotated

    def log_close(self, cid: str) -> None:
        buf = self.log_buffer(cid)
        with buf.cond:
            buf.closed = True
            buf.cond.notify_all()

    def wait(self, timeout: float) -> None:
        with self.cond:
            self.cond.wait(timeout)
