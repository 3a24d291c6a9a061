"""A Kubernetes API double for tests: a real HTTP server on 127.0.0.1 that the
official ``kubernetes`` client talks to, plus test-side operators and a kubelet that
run every pod as a local process. ``ApiDouble`` wires the parts together.

It must be able to disagree with the product: nothing here imports ``jupyter_ddl``
(``tests/k8s/test_double_independent.py`` checks), the operators compute every
replica's environment from the job object with their own rules (``envs``), and the
cluster behaves as real ones do where the product could go wrong: unknown fields
pruned (``fields``), webhook and quota refusals (``policy``), read-only ConfigMap
volumes (``container``), sidecars and sorted container statuses (``podstatus``),
Trainer releases, runtimes and public ConfigMap (``trainer``, ``use_trainer``), CRDs
readable by name, foreground deletion (``gc``).
"""

from __future__ import annotations

import tempfile
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from .kubelet import Kubelet
from .operator import Operator
from .policy import Policy
from .resources import DEFAULT_CRDS, Catalog, release_runtimes
from .scenario import Scenario
from .server import Handler, State
from .store import Store

RUNTIMES = "trainer.kubeflow.org/v1alpha1/clustertrainingruntimes"
CONFIGMAPS = "core/v1/configmaps"
SYSTEM_NAMESPACE = "kubeflow-system"
PUBLIC_CONFIGMAP = "kubeflow-trainer-public"

NAMESPACE = "team-a"


class ApiDouble:
    def __init__(self, crds: tuple[str, ...] = DEFAULT_CRDS, metrics: bool = True,
                 history: int = 2000, trainer: str = "v2.3.0", operators: bool = True) -> None:  # fmt: skip
        self.store = Store(history)
        self.catalog = Catalog(crds, metrics, trainer)
        self.policy = Policy()
        self.state = State(self.store, self.catalog, self.policy)
        self.scenario = Scenario()
        self._tmp = tempfile.TemporaryDirectory(prefix="apidouble-")
        self.kubelet = Kubelet(self.store, self.scenario, Path(self._tmp.name))
        self.operator = Operator(self.store, self.catalog, self.policy)
        self.operator.enabled = operators
        self._profile_user = False  # kubeflow_edit(): RBAC of a Kubeflow profile's owner
        self.use_trainer(trainer)
        self.state.pod_metrics = self._usage
        handler = type("BoundHandler", (Handler,), {"state": self.state})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )
        self.store.create(
            "core/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        )

    def start(self) -> ApiDouble:
        self._thread.start()
        self.operator.start()
        self.kubelet.start()
        return self

    def stop(self) -> None:
        self.store.closed = True
        self.operator.stop()
        self.kubelet.stop()
        with self.store.cond:
            self.store.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()
        self._tmp.cleanup()

    def __enter__(self) -> ApiDouble:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- helpers for tests ------------------------------------------------------------
    def use_trainer(self, release: str) -> None:
        """Serve Trainer ``release``'s CRDs and install the runtimes it ships, and from
        v2.2 on its public ConfigMap ``kubeflow-system/kubeflow-trainer-public`` with
        ``kubeflow_trainer_version`` (v2.2.0's ``manifests/overlays/manager``
        configMapGenerator; v2.0 and v2.1 publish nothing)."""
        self.catalog.trainer = release
        for old in self.store.list(RUNTIMES, None)[0]:
            self.store.delete(RUNTIMES, "", old["metadata"]["name"])
        for runtime in release_runtimes(release):
            self.store.create(RUNTIMES, runtime)
        if self.store.get("core/v1/namespaces", "", SYSTEM_NAMESPACE) is None:
            self.store.create("core/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": SYSTEM_NAMESPACE}})  # fmt: skip
        self.store.delete(CONFIGMAPS, SYSTEM_NAMESPACE, PUBLIC_CONFIGMAP)
        if tuple(int(p) for p in release[1:].split(".")) >= (2, 2):
            self.store.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": PUBLIC_CONFIGMAP, "namespace": SYSTEM_NAMESPACE},
                "data": {"kubeflow_trainer_version": release}})  # fmt: skip
        self._cluster_runtime_reads()

    def quota(self, name: str, hard: dict[str, str], namespace: str = NAMESPACE) -> None:
        """A ResourceQuota, e.g. ``{"pods": "1"}`` or ``{"count/configmaps": "0"}``."""
        self.store.create("core/v1/resourcequotas", {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"hard": hard}})  # fmt: skip

    def kubeflow_edit(self) -> None:
        """RBAC like Kubeflow's ``kubeflow-edit`` ClusterRole: jobs, pods, logs, ConfigMaps
        and Secrets, but no rule for ``podgroups`` (neither Volcano's nor coscheduling's),
        and TrainingRuntimes read-only (kubeflow/trainer v2.3.0
        ``manifests/overlays/kubeflow-platform/kubeflow-trainer-roles.yaml``)."""
        self.state.denied |= {("*", "podgroups"), ("create", "trainingruntimes")}
        self._profile_user = True
        self._cluster_runtime_reads()

    def _cluster_runtime_reads(self) -> None:
        """A profile's owner reads ClusterTrainingRuntimes only from Trainer v2.2 on, which
        binds their read to ``system:authenticated``. Before, the read is only in
        ``kubeflow-trainer-edit``, which reaches the owner through kubeflow-edit and a
        RoleBinding, and a RoleBinding grants nothing cluster-scoped (kubeflow/trainer
        v2.0.0, v2.1.0 and v2.2.0 ``manifests/overlays/kubeflow-platform``)."""
        reads = {(verb, "clustertrainingruntimes") for verb in ("get", "list", "watch")}
        release = tuple(int(p) for p in self.catalog.trainer[1:].split("."))
        if self._profile_user and release < (2, 2):
            self.state.denied |= reads
        elif self._profile_user:
            self.state.denied -= reads

    def label_namespace(self, labels: dict[str, str], namespace: str = NAMESPACE) -> None:
        self.store.mutate("core/v1/namespaces", "", namespace,
                          lambda o: o["metadata"].setdefault("labels", {}).update(labels))  # fmt: skip

    def kubeconfig(
        self, path: Path, namespace: str = NAMESPACE, contexts: dict[str, str] | None = None
    ) -> Path:
        """Write a kubeconfig pointing at this double; ``contexts`` maps extra context
        names to their namespace."""
        ctx = {"double": namespace, **(contexts or {})}
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "double", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": {"token": "not-a-secret"}}],
            "contexts": [
                {"name": n, "context": {"cluster": "double", "user": "tester", "namespace": ns}}
                for n, ns in ctx.items()
            ],
            "current-context": "double",
        }
        path.write_text(yaml.safe_dump(doc))
        return path

    def add_node(self, name: str, cpu: str = "8", memory: str = "32Gi", gpus: int = 0) -> None:
        alloc = {"cpu": cpu, "memory": memory, **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
        self.store.create("core/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                                            "status": {"allocatable": alloc, "capacity": alloc}})  # fmt: skip

    def expire_watches(self) -> None:
        self.store.expire_watches()

    def requests(self, method: str | None = None, contains: str = "") -> list[tuple[str, str]]:
        with self.state.lock:
            return [
                r
                for r in self.state.requests
                if (method is None or r[0] == method) and contains in r[1]
            ]

    def _usage(self, ns: str, pod: str) -> dict[str, dict[str, str]] | None:
        import psutil

        proc = self.kubelet.procs.get((ns, pod))
        if proc is None or proc.poll() is not None:
            return None
        try:
            p = psutil.Process(proc.pid)
            t = p.cpu_times()
            mem = p.memory_info().rss
        except psutil.Error:
            return None
        cpu_m = int((t.user + t.system) * 1000)  # cumulative, but shaped like a usage quantity
        return {"main": {"cpu": f"{cpu_m}m", "memory": f"{mem // 1024}Ki"}}


__all__ = ["ApiDouble", "NAMESPACE", "Scenario"]
