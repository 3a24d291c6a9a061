"""``KubernetesBackend``: Kubeflow jobs on a cluster, behind the one Backend ABC.

The cluster is the source of truth: jobs are found by our labels, re-attached by
name, and their status is read from the job object and its pods each time. A job
submitted into another namespace (``--namespace``) is remembered with it, so every
later call (status, watch, logs, cancel, delete) goes there.
"""

from __future__ import annotations

import builtins
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_ddl.backends.base import Backend, LogQuery
from jupyter_ddl.backends.kubernetes import status as S
from jupyter_ddl.backends.kubernetes.api_errors import from_api_exception
from jupyter_ddl.backends.kubernetes.capabilities import capabilities
from jupyter_ddl.backends.kubernetes.checkcache import CheckCache
from jupyter_ddl.backends.kubernetes.connection import (
    SA_DIR,
    Connection,
    connect,
    notebook_pod_name,
    require_client,
)
from jupyter_ddl.backends.kubernetes.logs import read_container
from jupyter_ddl.backends.kubernetes.objects import CustomObjects
from jupyter_ddl.backends.kubernetes.submit import notebook_pod, submit
from jupyter_ddl.backends.kubernetes.watch import JobWatcher
from jupyter_ddl.config import Config
from jupyter_ddl.core.kinds import KINDS, Kind
from jupyter_ddl.core.metrics import is_metric_line
from jupyter_ddl.errors import JobNotFound, ValidationError
from jupyter_ddl.i18n import tr
from jupyter_ddl.image.plan import notebook_container_image
from jupyter_ddl.manifests import LABEL_NOTEBOOK, MANAGED_SELECTOR
from jupyter_ddl.manifests.common import label_value
from jupyter_ddl.models import (
    Capabilities,
    CodeBundle,
    EventKind,
    JobEvent,
    JobHandle,
    JobSpec,
    JobState,
    JobStatus,
    LogLine,
    replica_id,
)


@dataclass(frozen=True)
class Ref:
    """Where one of our jobs is: its kind and namespace."""

    kind: Kind
    namespace: str


class KubernetesBackend(Backend):
    name = "kubernetes"

    def __init__(self, config: Config | None = None, *, kubeconfig: str | None = None,
                 sa_dir: Path = SA_DIR, environ: Mapping[str, str] | None = None,
                 usage_every: float = 5.0) -> None:  # fmt: skip
        require_client()  # BackendUnavailable now, not ImportError in the first call
        super().__init__(config)
        self._kubeconfig, self._sa_dir, self._environ = kubeconfig, sa_dir, environ
        self._conn: Connection | None = None
        self._refs: dict[str, Ref] = {}  # job name -> where it is, once seen
        self._lock = threading.Lock()
        self.usage_every = usage_every
        # what one submit's checks learnt, for the next (dropped with the connection)
        self._checks: CheckCache | None = None

    # -- plumbing -----------------------------------------------------------------------
    @property
    def conn(self) -> Connection:
        """The connection, opened on first use (raises BackendUnavailable)."""
        with self._lock:
            if self._conn is None:
                self._conn = connect(self.config, kubeconfig=self._kubeconfig, sa_dir=self._sa_dir)
            return self._conn

    def _find(self, name: str) -> tuple[Ref, dict[str, Any]]:
        """(where, job object) of our job ``name``; raises JobNotFound."""
        known = self._refs.get(name)
        where = [known] if known else [Ref(k, self.conn.namespace) for k in KINDS]
        for ref in where:
            obj = CustomObjects(self.conn.at(ref.namespace), ref.kind).get(name)
            if obj is None or (obj.get("metadata") or {}).get("deletionTimestamp"):
                continue  # not this kind, its CRD is absent, or being deleted (gone for the user)
            self._refs[name] = ref
            return ref, obj
        self._refs.pop(name, None)
        spaces = sorted({r.namespace for r in where})
        raise JobNotFound(
            tr(
                "no job named {name!r} in namespace {namespace}",
                name=name,
                namespace=", ".join(spaces),
            ),
            hint=tr("`%ddl list` shows the jobs"),
        )

    def _pods(self, ref: Ref, name: str) -> list[dict[str, Any]]:
        from kubernetes.client import ApiException

        conn = self.conn.at(ref.namespace)
        try:
            pods = conn.client("CoreV1Api").list_namespaced_pod(
                conn.namespace, label_selector=ref.kind.pod_selector(name)
            )
        except ApiException as e:
            raise from_api_exception(
                e,
                action=f"listing the pods of {name}",
                verb="list",
                resource="pods",
                namespace=conn.namespace,
            ) from e
        return conn.api.sanitize_for_serialization(pods).get("items") or []

    # -- Backend --------------------------------------------------------------------------
    def submit(self, spec: JobSpec, bundle: CodeBundle) -> JobHandle:
        conn = self.conn
        with self._lock:
            if self._checks is None:
                self._checks = CheckCache(self.config.kube_access_cache_seconds)
            checks = self._checks
        environ = self._environ if self._environ is not None else os.environ
        done = submit(conn, self.config, spec, bundle, environ, checks=checks)
        md = done.job["metadata"]
        self._refs[spec.name] = Ref(done.kind, md.get("namespace") or self.conn.namespace)
        return JobHandle(name=spec.name, backend=self.name, namespace=self._refs[spec.name].namespace,
                         notebook=spec.notebook, code_digest=bundle.digest, image=done.image,
                         image_pushed=done.pushed, warnings=list(done.warnings))  # fmt: skip

    def get(self, name: str) -> JobStatus:
        ref, obj = self._find(name)
        return S.job_status(ref.kind, obj, self._pods(ref, name), ref.namespace)

    def list(self, *, notebook: str | None = None) -> list[JobStatus]:
        from kubernetes.client import ApiException

        # Every job of the namespace, as `kubectl get` shows them: one a Kubeflow SDK or
        # kubectl created is the user's too, to read and cancel. A notebook's own list
        # is of the jobs we created from it.
        selector = None
        if notebook:
            selector = (
                f"{MANAGED_SELECTOR},{LABEL_NOTEBOOK}={label_value(notebook.rsplit('/', 1)[-1])}"
            )
        ns = self.conn.namespace
        try:
            pods = (
                self.conn.api.sanitize_for_serialization(
                    self.conn.client("CoreV1Api").list_namespaced_pod(ns)
                ).get("items")
                or []
            )
        except ApiException as e:
            raise from_api_exception(
                e, action="listing pods", verb="list", resource="pods", namespace=ns
            ) from e
        out = []
        for kind in KINDS:
            jobs = CustomObjects(self.conn, kind).list(selector)
            for obj in jobs or []:  # None: this operator is not installed
                if (obj.get("metadata") or {}).get("deletionTimestamp"):
                    continue
                name = obj["metadata"]["name"]
                self._refs.setdefault(name, Ref(kind, ns))
                mine = [p for p in pods if _selected(p, kind.pod_selector(name))]
                out.append(S.job_status(kind, obj, mine, ns))
        return sorted(out, key=lambda s: s.created or 0, reverse=True)

    def watch(
        self, name: str, *, stop: threading.Event | None = None, from_start: bool = True
    ) -> Iterator[JobEvent]:
        ref, _ = self._find(name)
        watcher = JobWatcher(
            self.conn.at(ref.namespace),
            ref.kind,
            name,
            stop=stop,
            from_start=from_start,
            usage_every=self.usage_every,
        )
        return watcher.events()

    def read_logs(self, name: str, query: LogQuery) -> Iterator[LogLine]:
        ref, _ = self._find(name)
        q = query
        if q.follow:
            return self._follow_logs(ref, name, q.replica, q.offset, q.tail, q.stop, q.raw)
        return iter(self._read_logs(ref, name, q.replica, q.offset, q.tail, q.raw))

    def _read_logs(
        self, ref: Ref, name: str, replica: str | None, offset: int, tail: int | None,
        raw: bool = False,
    ) -> builtins.list[LogLine]:  # fmt: skip
        out: builtins.list[LogLine] = []
        conn = self.conn.at(ref.namespace)
        pods = sorted(self._pods(ref, name), key=lambda p: ref.kind.pod_replica(p) or ("", 0))
        for pod in pods:
            key = ref.kind.pod_replica(pod)
            if key is None:
                continue
            rid = replica_id(*key)
            if replica and rid != replica:
                continue
            lines: builtins.list[tuple[float | None, str]] = []
            cs = S.container_status(ref.kind, pod) or {}
            pname, cname = pod["metadata"]["name"], cs.get("name") or ref.kind.container(key[0])
            if (cs.get("lastState") or {}).get("terminated"):
                lines += [x for x in read_container(conn, pname, cname, previous=True) if x]
            lines += [x for x in read_container(conn, pname, cname) if x]
            mine = [LogLine(rid, i, text, stamp) for i, (stamp, text) in enumerate(lines)]
            if not raw:  # offsets stay those of the whole log; a tail counts what is kept
                mine = [line for line in mine if not is_metric_line(line.text)]
            kept = mine[len(mine) - tail :] if tail is not None and tail < len(mine) else mine
            out += [line for line in kept if line.offset >= offset]
        return out

    def _follow_logs(self, ref: Ref, name: str, replica: str | None, offset: int,
                     tail: int | None, stop: threading.Event | None,
                     raw: bool = False) -> Iterator[LogLine]:  # fmt: skip
        floor: dict[str, int] = {}
        if tail is not None:  # where "the last tail lines" begin, per replica, right now
            for old in self._read_logs(ref, name, replica, 0, tail, raw):
                floor.setdefault(old.replica, old.offset)
        watcher = JobWatcher(
            self.conn.at(ref.namespace), ref.kind, name, stop=stop, usage_every=0, raw=raw
        )
        for ev in watcher.events():
            line = ev.log if ev.kind == EventKind.LOG else None
            if (
                line
                and replica in (None, line.replica)
                and line.offset >= max(offset, floor.get(line.replica, 0))
            ):
                yield line

    def cancel(self, name: str) -> JobStatus:
        ref, obj = self._find(name)
        current = S.job_status(ref.kind, obj, self._pods(ref, name), ref.namespace)
        if current.state.finished:
            return current
        patch = {
            "metadata": {"annotations": {S.ANNOTATION_CANCELLED: "true"}},
            "spec": ref.kind.suspend_patch(),
        }
        objects = CustomObjects(self.conn.at(ref.namespace), ref.kind)
        try:
            objects.patch(name, patch, f"cancelling {name}")
        except ValidationError:  # 422: this job cannot be suspended; deleting is the only stop
            self.delete(name)
            current.state = JobState.CANCELLED
            return current
        return self.get(name)

    def delete(self, name: str) -> None:
        ref, _ = self._find(name)
        CustomObjects(self.conn.at(ref.namespace), ref.kind).delete(name)
        self._refs.pop(name, None)

    def spec(self, name: str) -> JobSpec | None:
        _, obj = self._find(name)
        return S.submitted_spec(obj)

    def notebook_image(self) -> str | None:
        if notebook_pod_name() is None:
            return None  # not in a Kubeflow notebook: no connection opened for nothing
        return notebook_container_image(notebook_pod(self.conn))

    def capabilities(self) -> Capabilities:
        return capabilities(self.conn, self.config)

    def close(self) -> None:
        if self._checks is not None:
            self._checks.close()
            self._checks = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _selected(pod: dict[str, Any], selector: str) -> bool:
    key, _, value = selector.partition("=")
    return ((pod.get("metadata") or {}).get("labels") or {}).get(key) == value


__all__ = ["KubernetesBackend"]
