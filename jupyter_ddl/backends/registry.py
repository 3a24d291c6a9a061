"""Backends by name: the built-ins and the ``jupyter_ddl.backends`` entry points.

Outside the ``backends`` package, whose ``__init__`` imports ``base`` and so the
config: the config checks a backend name here without importing itself back.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from jupyter_ddl.errors import BackendUnavailable

if TYPE_CHECKING:
    from jupyter_ddl.backends.base import Backend

# Built-ins, so a source checkout works without being installed.
BUILTIN = {
    "local": "jupyter_ddl.backends.local:LocalBackend",
    "kubernetes": "jupyter_ddl.backends.kubernetes:KubernetesBackend",
}


def backend_names() -> list[str]:
    names = dict(BUILTIN)
    for ep in entry_points(group="jupyter_ddl.backends"):
        names.setdefault(ep.name, ep.value)
    return list(names)


def backend_class(name: str) -> type[Backend]:
    target = BUILTIN.get(name)
    if target is None:
        eps = {ep.name: ep.value for ep in entry_points(group="jupyter_ddl.backends")}
        target = eps.get(name)
    if target is None:
        raise BackendUnavailable(
            f"backend: unknown backend {name!r}; choose one of: {', '.join(backend_names())}"
        )
    module, _, attr = target.partition(":")
    try:
        cls: type[Backend] = getattr(importlib.import_module(module), attr)
    except ImportError as e:
        raise BackendUnavailable(
            f"{name}: the backend cannot be loaded ({e})",
            hint=f"reinstall the package that provides it ({module.split('.')[0]})",
        ) from None
    return cls
