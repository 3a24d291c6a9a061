"""Reaching the cluster: a kubeconfig when one is named (``KUBECONFIG``, several files
merged as kubectl merges them), else in-cluster config inside a pod, else
``~/.kube/config``; the context selectable. The namespace from our config, else the
context's when a context was chosen by name, else the pod's service-account namespace
(the Kubeflow profile), else the current context's, else ``default``. A job's calls
go to its own namespace (``Connection.at``), which ``--namespace`` may make another.

Each backend gets its own ``ApiClient`` so the global ``kubernetes`` configuration of
the user's kernel is never changed. Every request it sends has a connect and a read
timeout (``Timeouts``), and a cluster that does not answer raises one line
(``ClusterUnreachable``) instead of urllib3's retry chain, so an unreachable cluster
costs a sidebar poll or ``%ddl list`` a few seconds at most, and only once per 30 s
(``manager.UNAVAILABLE_RETRY_S``).
"""

from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from jupyter_ddl.backends.kubernetes.api_errors import transport_reason, unreachable
from jupyter_ddl.config import Config
from jupyter_ddl.errors import BackendNotConfigured, BackendUnavailable, ClusterUnauthorized
from jupyter_ddl.i18n import tr

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

    def at(self, namespace: str | None) -> Connection:
        """This connection for calls in ``namespace`` (the same client underneath: close
        only the original)."""
        if not namespace or namespace == self.namespace:
            return self
        return dataclasses.replace(self, namespace=namespace)

    def close(self) -> None:
        try:
            self.api.close()
        except Exception:  # noqa: BLE001 - closing a pool must never fail a caller
            pass


@dataclass(frozen=True)
class Timeouts:
    """Seconds: to open a connection; to wait for the answer of a read (discovery,
    get, list: what every poll waits on) and of a write (create, patch, delete).
    Configured by ``kube_connect_timeout``, ``kube_read_timeout``, ``kube_write_timeout``."""

    connect: float
    read: float
    write: float

    @classmethod
    def of(cls, cfg: Config) -> Timeouts:
        return cls(cfg.kube_connect_timeout, cfg.kube_read_timeout, cfg.kube_write_timeout)

    def for_request(self, method: str, url: str) -> tuple[float, float | None]:
        """(connect, read) for one request. A watch gets its server-side timeout plus
        the read timeout; a followed log none (a training may print nothing for an
        hour; TCP keepalive finds a dead peer instead)."""
        query = parse_qs(urlsplit(url).query)
        if query.get("watch", [""])[0] == "true":
            server_side = float(query.get("timeoutSeconds", ["0"])[0] or 0)
            return (self.connect, server_side + self.read if server_side else None)
        if query.get("follow", [""])[0] == "true":
            return (self.connect, None)
        return (self.connect, self.read if method.upper() in ("GET", "HEAD") else self.write)


def is_stream(url: str) -> bool:
    query = parse_qs(urlsplit(url).query)
    return "true" in (query.get("watch", [""])[0], query.get("follow", [""])[0])


def guard_requests(rest: Any, host: str, timeouts: Timeouts) -> None:
    """Give every request of this REST client our timeouts, and turn a transport
    failure of a plain request into ClusterUnreachable. Streams (watch, follow) keep
    urllib3's errors: their readers reconnect on them. Set on our own client instance,
    so nothing global changes."""
    import urllib3

    send: Callable[..., Any] = rest.request

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("_request_timeout") is None:
            kwargs["_request_timeout"] = timeouts.for_request(method, url)
        if is_stream(url):
            return send(method, url, *args, **kwargs)
        try:
            return send(method, url, *args, **kwargs)
        except (urllib3.exceptions.HTTPError, OSError) as e:
            limit = kwargs["_request_timeout"]
            connect, read = limit if isinstance(limit, tuple) else (timeouts.connect, limit)
            raise unreachable(host, transport_reason(e, connect_s=connect, read_s=read)) from None

    rest.request = request


def probe(rest: Any, host: str) -> None:
    """One cheap round trip (``GET /version``, through the guarded REST client):
    raises ClusterUnreachable when nothing answers. Done before the first real call
    because the client's API classes take 1-2 s to import, which a cluster that is not
    there should not cost. Any HTTP answer, even 401 or 403, means it is reachable."""
    from kubernetes.client.exceptions import ApiException

    try:
        resp = rest.request("GET", host.rstrip("/") + "/version", headers={"Accept": "*/*"})
    except ApiException:
        return  # older clients raise on any non-2xx answer: it answered
    read = getattr(resp, "read", None)
    if callable(read):
        read()  # hands the connection back to the pool


def keepalive_options() -> list[tuple[int, int, int]]:
    """urllib3's socket options plus TCP keepalive (a dead peer is noticed in ~1 min)."""
    from urllib3.connection import HTTPConnection

    opts = list(HTTPConnection.default_socket_options) + [
        (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    ]
    for name, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, name):  # Linux; macOS has only some of them
            opts.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    return opts


def require_client() -> None:
    """Raise BackendUnavailable (one line) when the ``kubernetes`` client cannot be
    imported: a broken or trimmed environment must not break the local backend."""
    try:
        import kubernetes.client
        import kubernetes.config  # noqa: F401
    except ImportError as e:
        raise BackendUnavailable(
            "kubernetes: " + tr("the Python client cannot be imported ({error})", error=e),
            hint=tr("pip install 'kubernetes>=36' in the kernel's environment"),
        ) from None


def _guard_refresh(conf: Any) -> None:
    """An exec/OIDC credential refreshed before a request may fail (expired login):
    one line, not the plugin's traceback."""
    hook = getattr(conf, "refresh_api_key_hook", None)
    if hook is None:
        return

    def refresh(c: Any) -> None:
        try:
            hook(c)
        except Exception as e:  # noqa: BLE001 - any plugin failure means "log in again"
            raise ClusterUnauthorized(
                "kubernetes: "
                + tr("refreshing the credentials failed ({error})", error=_first_line(e)),
                hint=tr("log in to the cluster again"),
            ) from None

    conf.refresh_api_key_hook = refresh


def service_account_namespace(sa_dir: Path = SA_DIR) -> str | None:
    try:
        ns = (sa_dir / "namespace").read_text().strip()
    except OSError:
        return None
    return ns or None


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and (SA_DIR / "token").exists()


def kubeconfig_paths(kubeconfig: str | None) -> list[str]:
    """The kubeconfig files to merge, existing ones only: the one named, else every
    file of ``KUBECONFIG``, else ``~/.kube/config``."""
    from kubernetes.config.kube_config import KUBE_CONFIG_DEFAULT_LOCATION

    listed = kubeconfig or os.environ.get("KUBECONFIG", "") or KUBE_CONFIG_DEFAULT_LOCATION
    paths = [os.path.expanduser(p) for p in listed.split(os.pathsep) if p]
    return [p for p in paths if os.path.exists(p)]


def kubeconfig_loader(paths: list[str]) -> Any:
    """One loader over ``paths`` merged as kubectl merges them: the first file to name a
    cluster, user or context wins, and ``current-context`` comes from the first file
    that sets it (the client's own merger lets the last one win)."""
    from kubernetes.config.kube_config import KubeConfigLoader, KubeConfigMerger

    merged = KubeConfigMerger(os.pathsep.join(paths))
    first = next(
        (c for p in merged.paths if (c := (merged.config_files[p] or {}).get("current-context"))),
        None,
    )
    if first:
        merged.config.value["current-context"] = first
    return KubeConfigLoader(config_dict=merged.config, config_base_path=None)


def connect(cfg: Config, *, kubeconfig: str | None = None, sa_dir: Path = SA_DIR) -> Connection:
    """Open a connection; raises BackendUnavailable with what to do when none is possible."""
    require_client()
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException
    from urllib3.util.retry import Retry

    conf = client.Configuration()
    context_ns: str | None = None
    named = kubeconfig or os.environ.get("KUBECONFIG")
    in_cluster = _in_cluster() and not cfg.kube_context and not named
    try:
        if in_cluster:
            config.load_incluster_config(client_configuration=conf)
        else:
            paths = kubeconfig_paths(kubeconfig)
            if not paths:
                where = named or config.kube_config.KUBE_CONFIG_DEFAULT_LOCATION
                # a KUBECONFIG that names no file is a mistake to report; no kubeconfig
                # at all is a machine where Kubernetes was never set up
                raise (BackendUnavailable if named else BackendNotConfigured)(
                    f"kubernetes: not configured (no kubeconfig at {where}, not in a cluster pod)",
                    hint="set KUBECONFIG, or keep to the local backend",
                )
            loader = kubeconfig_loader(paths)
            contexts = loader.list_contexts()
            if cfg.kube_context:
                if not any(c["name"] == cfg.kube_context for c in contexts):
                    names = ", ".join(c["name"] for c in contexts)
                    raise BackendUnavailable(
                        tr("kube context {name!r} is not in the kubeconfig", name=cfg.kube_context),
                        hint=tr(
                            "choose one of: {names} (`%ddl config kube_context=NAME`)", names=names
                        ),
                    )
                loader.set_active_context(cfg.kube_context)
            chosen = loader.current_context or {}
            context_ns = (chosen.get("context") or {}).get("namespace")
            loader.load_and_set(conf)
    except (ConfigException, OSError, TypeError, KeyError) as e:
        raise BackendUnavailable(
            "kubernetes: " + tr("no cluster configured ({error})", error=_first_line(e)),
            hint=tr("run inside a cluster pod, set KUBECONFIG, or use the local backend"),
        ) from None
    # Fail fast: no retry of a refused, timed-out or TLS-failed connection (the manager
    # skips an unreachable cluster for a while instead); urllib3 still replaces a pooled
    # connection the server dropped before reusing it.
    conf.retries = Retry(total=0, redirect=0)
    if hasattr(conf, "socket_options"):
        conf.socket_options = keepalive_options()
    _guard_refresh(conf)
    api = client.ApiClient(conf)
    guard_requests(api.rest_client, conf.host, Timeouts.of(cfg))
    probe(api.rest_client, conf.host)
    # a context chosen by name says where the user meant to work
    chosen_ns = context_ns if cfg.kube_context else None
    namespace = (
        cfg.namespace or chosen_ns or service_account_namespace(sa_dir) or context_ns or "default"
    )
    return Connection(api, namespace, cfg.kube_context, in_cluster, notebook_pod_name())


def notebook_pod_name() -> str | None:
    """The notebook's own pod when this is a Kubeflow notebook server (it sets
    ``NB_PREFIX``; the pod name is the hostname), else None."""
    return os.environ.get("HOSTNAME") if os.environ.get("NB_PREFIX") else None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
