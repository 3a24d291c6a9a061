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
from jupyter_ddl.i18n import tr

if TYPE_CHECKING:
    from jupyter_ddl.backends.base import Backend


def backend_class(name: str) -> type[Backend]:
    """The class of the backend ``name``, imported on first use."""
    known = registered()
    target = known.get(name)
    if target is None and not known:
        raise BackendUnavailable(
            "backend: "
            + tr("no backend is registered (the {group} entry points are missing)", group=GROUP),
            hint=tr("install jupyter-ddl (pip install -e . in a source checkout)"),
        )
    if target is None:
        shown = repr(name) if len(name) <= 40 else f"{name[:40]!r}... ({len(name)} characters)"
        said = tr(
            "unknown backend {name}; choose one of: {known}",
            name=shown, known=", ".join(backend_names()),
        )  # fmt: skip
        raise UnknownBackend(f"backend: {said}")
    module, _, attr = target.partition(":")
    try:
        cls: type[Backend] = getattr(importlib.import_module(module), attr)
    except ImportError as e:
        raise BackendUnavailable(
            tr("{name}: the backend cannot be loaded ({error})", name=name, error=e),
            hint=tr(
                "reinstall the package that provides it ({package})",
                package=module.split(".")[0],
            ),
        ) from None
    return cls
