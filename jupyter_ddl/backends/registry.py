"""Backends by name: the ``jupyter_ddl.backends`` entry points, the built-ins included
(``pyproject.toml`` declares them, so one table names every backend). The names alone
come from ``names.py``, which the config reads without importing this module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from jupyter_ddl.backends.names import GROUP, registered
from jupyter_ddl.backends.names import backend_names as backend_names
from jupyter_ddl.errors import BackendUnavailable, UnknownBackend

if TYPE_CHECKING:
    from jupyter_ddl.backends.base import Backend


def backend_class(name: str) -> type[Backend]:
    """The class of the backend ``name``, imported on first use."""
    known = registered()
    target = known.get(name)
    if target is None and not known:
        raise BackendUnavailable(
            f"backend: no backend is registered (the {GROUP} entry points are missing)",
            hint="install jupyter-ddl (pip install -e . in a source checkout)",
        )
    if target is None:
        shown = repr(name) if len(name) <= 40 else f"{name[:40]!r}... ({len(name)} characters)"
        raise UnknownBackend(
            f"backend: unknown backend {shown}; choose one of: {', '.join(backend_names())}"
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
