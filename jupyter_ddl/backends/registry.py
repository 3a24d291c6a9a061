"""Backends by name: the ``jupyter_ddl.backends`` entry points, the built-ins included
(``pyproject.toml`` declares them, so one table names every backend).

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

GROUP = "jupyter_ddl.backends"


def _registered() -> dict[str, str]:
    """name -> ``module:Class`` of every installed backend."""
    return {ep.name: ep.value for ep in entry_points(group=GROUP)}


def backend_names() -> list[str]:
    """The installed backends' names, ``local`` first (the default of a fresh config)."""
    return sorted(_registered(), key=lambda n: (n != "local", n))


def backend_class(name: str) -> type[Backend]:
    """The class of the backend ``name``, imported on first use."""
    registered = _registered()
    target = registered.get(name)
    if target is None and not registered:
        raise BackendUnavailable(
            f"backend: no backend is registered (the {GROUP} entry points are missing)",
            hint="install jupyter-ddl (pip install -e . in a source checkout)",
        )
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
