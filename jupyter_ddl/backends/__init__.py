"""Backends: where a job's replicas run. Found by name through entry points, imported
lazily so ``import jupyter_ddl`` never imports kubernetes or a framework."""

from __future__ import annotations

from ..backend_registry import BUILTIN, backend_class, backend_names
from .base import Backend

__all__ = ["BUILTIN", "Backend", "backend_class", "backend_names"]
