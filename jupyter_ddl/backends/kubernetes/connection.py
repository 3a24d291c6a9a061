"""Reaching the cluster: in-cluster config inside a pod, else kubeconfig (context
selectable); the namespace from our config, else the pod's service-account namespace
(the Kubeflow profile), else the context's, else ``default``.

Each backend gets its own ``ApiClient`` so the global ``kubernetes`` configuration of
the user's kernel is never changed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...config import Config
from ...errors import BackendUnavailable

SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass
class Connection:
    """One API client plus where it points."""

    api: Any  # kubernetes.client.ApiClient
    namespace: str
    context: str | None = None
    in_cluster: bool = False
    pod_name: str | None = None  # the notebook's own pod, when running in one
    _apis: dict[str, Any] = field(default_factory=dict)

    def client(self, name: str) -> Any:
        """``CoreV1Api``, ``CustomObjectsApi``... bound to this connection (cached)."""
        if name not in self._apis:
            from kubernetes import client

            self._apis[name] = getattr(client, name)(self.api)
        return self._apis[name]

    def close(self) -> None:
        try:
            self.api.close()
        except Exception:  # noqa: BLE001 - closing a pool must never fail a caller
            pass


def service_account_namespace(sa_dir: Path = SA_DIR) -> str | None:
    try:
        ns = (sa_dir / "namespace").read_text().strip()
    except OSError:
        return None
    return ns or None


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and (SA_DIR / "token").exists()


def connect(cfg: Config, *, kubeconfig: str | None = None, sa_dir: Path = SA_DIR) -> Connection:
    """Open a connection; raises BackendUnavailable with what to do when none is possible."""
    try:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException
    except ImportError as e:
        raise BackendUnavailable(
            "the kubernetes client is not installed", hint="pip install 'jupyter-ddl[kubernetes]'"
        ) from e
    conf = client.Configuration()
    context_ns: str | None = None
    in_cluster = _in_cluster() and not cfg.kube_context and not kubeconfig
    try:
        if in_cluster:
            config.load_incluster_config(client_configuration=conf)
        else:
            path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or None
            contexts, active = config.list_kube_config_contexts(config_file=path)
            chosen = (
                next((c for c in contexts if c["name"] == cfg.kube_context), None)
                if cfg.kube_context
                else active
            )
            if cfg.kube_context and chosen is None:
                names = ", ".join(c["name"] for c in contexts)
                raise BackendUnavailable(
                    f"kube context {cfg.kube_context!r} is not in the kubeconfig",
                    hint=f"choose one of: {names} (`%ddl config kube_context=NAME`)",
                )
            context_ns = ((chosen or {}).get("context") or {}).get("namespace")
            config.load_kube_config(
                config_file=path, context=cfg.kube_context, client_configuration=conf
            )
    except (ConfigException, OSError, TypeError) as e:
        raise BackendUnavailable(
            f"no Kubernetes cluster configured ({e})",
            hint="run inside a cluster pod, set KUBECONFIG, or use the local backend",
        ) from e
    namespace = cfg.namespace or service_account_namespace(sa_dir) or context_ns or "default"
    # A Kubeflow notebook server sets NB_PREFIX; its pod name is the hostname.
    pod = os.environ.get("HOSTNAME") if os.environ.get("NB_PREFIX") else None
    return Connection(client.ApiClient(conf), namespace, cfg.kube_context, in_cluster, pod)
