"""Backends: where a job's replicas run. Found by name through entry points, imported
lazily so ``import jupyter_ddl`` never imports kubernetes or a framework, and a local
supervisor, which imports ``backends.local``'s modules, not the registry (entry points
cost tens of milliseconds of its start-up)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jupyter_ddl.backends.base import Backend
    from jupyter_ddl.backends.registry import backend_class, backend_names

__all__ = ["Backend", "backend_class", "backend_names"]


def __getattr__(name: str) -> Any:
    if name == "Backend":
        from jupyter_ddl.backends.base import Backend

        return Backend
    if name in ("backend_class", "backend_names"):
        from jupyter_ddl.backends import registry as backend_registry

        return getattr(backend_registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
