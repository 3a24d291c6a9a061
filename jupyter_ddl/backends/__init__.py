"""Backends: where a job's replicas run. Found by name through entry points, imported
lazily so ``import jupyter_ddl`` never imports kubernetes or a framework, and a local
supervisor, which imports ``backends.local``'s modules, not the registry (entry points
cost tens of milliseconds of its start-up)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..backend_registry import BUILTIN, backend_class, backend_names
    from .base import Backend

__all__ = ["BUILTIN", "Backend", "backend_class", "backend_names"]


def __getattr__(name: str) -> Any:
    if name == "Backend":
        from .base import Backend

        return Backend
    if name in ("BUILTIN", "backend_class", "backend_names"):
        from .. import backend_registry

        return getattr(backend_registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
