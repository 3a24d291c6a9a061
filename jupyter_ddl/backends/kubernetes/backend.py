"""``KubernetesBackend``: Kubeflow jobs on a cluster, behind the one Backend ABC.

The cluster is the source of truth: jobs are found by our labels, re-attached by
name, and their status is read from the job object and its pods each time.
"""

from __future__ import annotations

import builtins
import json
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ...config import Config
from ...errors import JobNotFound
from ...manifests import ANNOTATION_SPEC, LABEL_NOTEBOOK, MANAGED_SELECTOR, RESOURCES
from ...manifests.common import label_value
from ...models import (
    Capabilities,
    CodeBundle,
    JobEvent,
    JobHandle,
    JobSpec,
    JobState,
    JobStatus,
    LogLine,
)
from ..base import Backend
from . import status as S
from .connection import SA_DIR, Connection, connect, require_client
from .errors import from_api_exception
from .logs import read_container
from .preflight import split_api_version
from .watch import JobWatcher

KINDS = ("TFJob", "PyTorchJob", "MPIJob", "TrainJob")


class KubernetesBackend(Backend):
    name = "kubernetes"

    def __init__(self, config: Config | None = None, *, kubeconfig: str | None = None,
                 sa_dir: Path = SA_DIR, environ: Mapping[str, str] | None = None,
                 usage_every: float = 5.0) -> None:  # fmt: skip
        require_client()  # BackendUnavailable now, not ImportError in the first call
        super().__init__(config)
        self._kubeconfig, self._sa_dir, self._environ = kubeconfig, sa_dir, environ
        self._conn: Connection | None = None
        self._kinds: dict[str, str] = {}  # job name -> kind, once seen
        self._lock = threading.Lock()
        self.usage_every = usage_every

    # -- plumbing -----------------------------------------------------------------------
    @property
    def conn(self) -> Connection:
        """The connection, opened on first use (raises BackendUnavailable)."""
        with self._lock:
            if self._conn is None:
                self._conn = connect(self.config, kubeconfig=self._kubeconfig, sa_dir=self._sa_dir)
            return self._conn

    def _find(self, name: str) -> tuple[str, dict[str, Any]]:
        """(kind, job object) of our job ``name``; raises JobNotFound."""
        from kubernetes.client import ApiException

        kinds = [self._kinds[name]] if name in self._kinds else list(KINDS)
        co = self.conn.client("CustomObjectsApi")
        for kind in kinds:
            api_version, plural = RESOURCES[kind]
            group, version = split_api_version(api_version)
            try:
                obj = co.get_namespaced_custom_object(
                    group, version, self.conn.namespace, plural, name
                )
            except ApiException as e:
                if e.status == 404:
                    continue  # not this kind, or its CRD is not installed
                raise from_api_exception(
                    e,
                    action=f"reading job {name}",
                    verb="get",
                    resource=plural,
                    namespace=self.conn.namespace,
                ) from e
            if (obj.get("metadata") or {}).get("deletionTimestamp"):
                continue  # being deleted: gone for the user
            self._kinds[name] = kind
            return kind, obj
        self._kinds.pop(name, None)
        raise JobNotFound(
            f"no job named {name!r} in namespace {self.conn.namespace}",
            hint="`%ddl list` shows the jobs",
        )

    def _pods(self, kind: str, name: str) -> list[dict[str, Any]]:
        from kubernetes.client import ApiException

        try:
            pods = self.conn.client("CoreV1Api").list_namespaced_pod(
                self.conn.namespace, label_selector=S.pod_selector(kind, name)
            )
        except ApiException as e:
            raise from_api_exception(
                e,
                action=f"listing the pods of {name}",
                verb="list",
                resource="pods",
                namespace=self.conn.namespace,
            ) from e
        return self.conn.api.sanitize_for_serialization(pods).get("items") or []

    # -- Backend --------------------------------------------------------------------------
    def submit(self, spec: JobSpec, bundle: CodeBundle) -> JobHandle:
        from .submit import submit

        done = submit(
            self.conn,
            self.config,
            spec,
            bundle,
            self._environ if self._environ is not None else os.environ,
        )
        md = done.job["metadata"]
        self._kinds[spec.name] = done.job["kind"]
        return JobHandle(name=spec.name, backend=self.name, namespace=md.get("namespace"),
                         notebook=spec.notebook, code_digest=bundle.digest)  # fmt: skip

    def get(self, name: str) -> JobStatus:
        kind, obj = self._find(name)
        return S.job_status(kind, obj, self._pods(kind, name), self.conn.namespace)

    def list(self, *, notebook: str | None = None) -> list[JobStatus]:
        from kubernetes.client import ApiException

        selector = MANAGED_SELECTOR
        if notebook:
            selector += f",{LABEL_NOTEBOOK}={label_value(notebook.rsplit('/', 1)[-1])}"
        co, ns = self.conn.client("CustomObjectsApi"), self.conn.namespace
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
            api_version, plural = RESOURCES[kind]
            group, version = split_api_version(api_version)
            try:
                jobs = (
                    co.list_namespaced_custom_object(
                        group, version, ns, plural, label_selector=selector
                    ).get("items")
                    or []
                )
            except ApiException as e:
                if e.status == 404:
                    continue  # this operator is not installed
                raise from_api_exception(
                    e, action=f"listing {kind}s", verb="list", resource=plural, namespace=ns
                ) from e
            for obj in jobs:
                if (obj.get("metadata") or {}).get("deletionTimestamp"):
                    continue
                name = obj["metadata"]["name"]
                self._kinds[name] = kind
                mine = [p for p in pods if _selected(p, S.pod_selector(kind, name))]
                out.append(S.job_status(kind, obj, mine, ns))
        return sorted(out, key=lambda s: s.created or 0, reverse=True)

    def watch(
        self, name: str, *, stop: threading.Event | None = None, from_start: bool = True
    ) -> Iterator[JobEvent]:
        kind, _ = self._find(name)
        api_version, plural = RESOURCES[kind]
        watcher = JobWatcher(
            self.conn,
            kind,
            api_version,
            plural,
            name,
            stop=stop,
            from_start=from_start,
            usage_every=self.usage_every,
        )
        return watcher.events()

    def logs(self, name: str, *, replica: str | None = None, offset: int = 0, tail: int | None = None,
             follow: bool = False, stop: threading.Event | None = None) -> Iterator[LogLine]:  # fmt: skip
        kind, _ = self._find(name)
        if follow:
            return self._follow_logs(kind, name, replica, offset, tail, stop)
        return iter(self._read_logs(kind, name, replica, offset, tail))

    def _read_logs(
        self, kind: str, name: str, replica: str | None, offset: int, tail: int | None
    ) -> builtins.list[LogLine]:
        out: builtins.list[LogLine] = []
        pods = sorted(self._pods(kind, name), key=lambda p: S.pod_replica(kind, p) or ("", 0))
        for pod in pods:
            key = S.pod_replica(kind, pod)
            if key is None:
                continue
            rid = f"{key[0].lower()}-{key[1]}"
            if replica and rid != replica:
                continue
            lines: builtins.list[tuple[float | None, str]] = []
            cs = ((pod.get("status") or {}).get("containerStatuses") or [{}])[0]
            pname, cname = pod["metadata"]["name"], cs.get("name")
            if (cs.get("lastState") or {}).get("terminated"):
                lines += [x for x in read_container(self.conn, pname, cname, previous=True) if x]
            lines += [x for x in read_container(self.conn, pname, cname) if x]
            mine = [LogLine(rid, i, text, stamp) for i, (stamp, text) in enumerate(lines)]
            start = max(offset, len(mine) - tail) if tail is not None else offset
            out += mine[start:]
        return out

    def _follow_logs(self, kind: str, name: str, replica: str | None, offset: int, tail: int | None,
                     stop: threading.Event | None) -> Iterator[LogLine]:  # fmt: skip
        from ...models import EventKind

        floor: dict[str, int] = {}
        if tail is not None:  # where "the last tail lines" begin, per replica, right now
            for old in self._read_logs(kind, name, replica, 0, None):
                floor[old.replica] = old.offset + 1
            floor = {r: max(0, n - tail) for r, n in floor.items()}
        api_version, plural = RESOURCES[kind]
        for ev in JobWatcher(
            self.conn, kind, api_version, plural, name, stop=stop, usage_every=0
        ).events():
            line = ev.log if ev.kind == EventKind.LOG else None
            if (
                line
                and replica in (None, line.replica)
                and line.offset >= max(offset, floor.get(line.replica, 0))
            ):
                yield line

    def cancel(self, name: str) -> JobStatus:
        from kubernetes.client import ApiException

        kind, obj = self._find(name)
        current = S.job_status(kind, obj, self._pods(kind, name), self.conn.namespace)
        if current.state.finished:
            return current
        api_version, plural = RESOURCES[kind]
        group, version = split_api_version(api_version)
        suspend = {"suspend": True} if kind == "TrainJob" else {"runPolicy": {"suspend": True}}
        patch = {"metadata": {"annotations": {S.ANNOTATION_CANCELLED: "true"}}, "spec": suspend}
        co = self.conn.client("CustomObjectsApi")
        try:
            co.patch_namespaced_custom_object(
                group, version, self.conn.namespace, plural, name, patch
            )
        except ApiException as e:
            if e.status != 422:
                raise from_api_exception(
                    e,
                    action=f"cancelling {name}",
                    verb="patch",
                    resource=plural,
                    namespace=self.conn.namespace,
                ) from e
            self.delete(name)  # this kind cannot be suspended: deleting is the only stop
            current.state = JobState.CANCELLED
            return current
        return self.get(name)

    def delete(self, name: str) -> None:
        from kubernetes import client
        from kubernetes.client import ApiException

        kind, _ = self._find(name)
        api_version, plural = RESOURCES[kind]
        group, version = split_api_version(api_version)
        try:
            self.conn.client("CustomObjectsApi").delete_namespaced_custom_object(
                group, version, self.conn.namespace, plural, name,
                body=client.V1DeleteOptions(propagation_policy="Foreground"),
            )  # fmt: skip
        except ApiException as e:
            if e.status != 404:
                raise from_api_exception(
                    e,
                    action=f"deleting {name}",
                    verb="delete",
                    resource=plural,
                    namespace=self.conn.namespace,
                ) from e
        self._kinds.pop(name, None)

    def spec(self, name: str) -> JobSpec | None:
        _, obj = self._find(name)
        raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_SPEC)
        return JobSpec.from_dict(json.loads(raw)) if raw else None

    def capabilities(self) -> Capabilities:
        from .capabilities import capabilities

        return capabilities(self.conn, self.config)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _selected(pod: dict[str, Any], selector: str) -> bool:
    key, _, value = selector.partition("=")
    return ((pod.get("metadata") or {}).get("labels") or {}).get(key) == value


__all__ = ["KubernetesBackend"]
