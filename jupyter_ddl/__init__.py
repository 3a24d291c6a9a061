"""jupyter-ddl: run a notebook cell as a distributed deep-learning job.

This module is the public API: what notebooks, scripts and the README import. Every
name below is re-exported from the module that holds it and loaded on first use
(PEP 562), so ``import jupyter_ddl`` imports no framework, no widget and no
Kubernetes client; the magics, backends and server extension load when first used.
Anything imported from below this module is private and may move.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from jupyter_ddl._version import __version__

if TYPE_CHECKING:
    from jupyter_ddl.config import Config, load_config
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.core.contract import cluster_endpoints, replica_env, replica_ids
    from jupyter_ddl.core.failures import diagnose, outcomes
    from jupyter_ddl.core.restarts import Exit, on_exit
    from jupyter_ddl.errors import (
        BackendUnavailable,
        CaptureError,
        ClusterError,
        ClusterUnauthorized,
        ClusterUnreachable,
        DDLError,
        JobConflict,
        JobFailed,
        JobNotFound,
        PermissionDenied,
        RegistryError,
        ResourceError,
        TransientRegistryError,
        UnknownBackend,
        ValidationError,
    )
    from jupyter_ddl.image.append import code_changes
    from jupyter_ddl.image.layer import build_layer
    from jupyter_ddl.manager import JobManager, JobResults, default_manager
    from jupyter_ddl.models import (
        CodeBundle,
        GangScheduling,
        JobEvent,
        JobHandle,
        JobSpec,
        JobState,
        JobStatus,
        ReplicaState,
        ReplicaStatus,
        Resources,
        RestartPolicy,
    )

#: public name -> the module that holds it (read on first use of the name)
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["JobManager", "JobResults", "default_manager"], "jupyter_ddl.manager"),
    **dict.fromkeys(
        [
            "CodeBundle",
            "GangScheduling",
            "JobEvent",
            "JobHandle",
            "JobSpec",
            "JobState",
            "JobStatus",
            "ReplicaState",
            "ReplicaStatus",
            "Resources",
            "RestartPolicy",
        ],
        "jupyter_ddl.models",
    ),
    **dict.fromkeys(
        [
            "BackendUnavailable",
            "CaptureError",
            "ClusterError",
            "ClusterUnauthorized",
            "ClusterUnreachable",
            "DDLError",
            "JobConflict",
            "JobFailed",
            "JobNotFound",
            "PermissionDenied",
            "RegistryError",
            "ResourceError",
            "TransientRegistryError",
            "UnknownBackend",
            "ValidationError",
        ],
        "jupyter_ddl.errors",
    ),
    **dict.fromkeys(["Config", "load_config"], "jupyter_ddl.config"),
    "build_bundle": "jupyter_ddl.core.bundle",
    **dict.fromkeys(
        ["cluster_endpoints", "replica_env", "replica_ids"], "jupyter_ddl.core.contract"
    ),
    **dict.fromkeys(["diagnose", "outcomes"], "jupyter_ddl.core.failures"),
    **dict.fromkeys(["Exit", "on_exit"], "jupyter_ddl.core.restarts"),
    "build_layer": "jupyter_ddl.image.layer",
    "code_changes": "jupyter_ddl.image.append",
}


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use, then keep it here."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'jupyter_ddl' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jupyter_ddl``: registers ``%%distribute`` and ``%ddl``."""
    from jupyter_ddl.notebook.magics import load  # here: IPython loads with the magics only

    load(ipython)


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """The server extension Jupyter loads (the REST API and the job stream)."""
    from jupyter_ddl.server.app import DDLServerApp  # here: jupyter_server and tornado

    return [{"module": "jupyter_ddl.server.app", "app": DDLServerApp}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the prebuilt JupyterLab extension lies inside the package."""
    return [{"src": "labextension", "dest": "jupyter-ddl"}]


__all__ = [
    "BackendUnavailable",
    "CaptureError",
    "ClusterError",
    "ClusterUnauthorized",
    "ClusterUnreachable",
    "CodeBundle",
    "Config",
    "DDLError",
    "Exit",
    "GangScheduling",
    "JobConflict",
    "JobEvent",
    "JobFailed",
    "JobHandle",
    "JobManager",
    "JobNotFound",
    "JobResults",
    "JobSpec",
    "JobState",
    "JobStatus",
    "PermissionDenied",
    "RegistryError",
    "ReplicaState",
    "ReplicaStatus",
    "ResourceError",
    "Resources",
    "RestartPolicy",
    "TransientRegistryError",
    "UnknownBackend",
    "ValidationError",
    "__version__",
    "build_bundle",
    "build_layer",
    "cluster_endpoints",
    "code_changes",
    "default_manager",
    "diagnose",
    "load_config",
    "load_ipython_extension",
    "on_exit",
    "outcomes",
    "replica_env",
    "replica_ids",
]
