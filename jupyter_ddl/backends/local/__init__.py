"""The local backend: every replica a process on this machine (the embedded default).

``LocalBackend`` is loaded on first use: a supervisor or a replica's helper imports a
module of this package without the kernel side's (backend, events, manager), which
costs every cold job's start-up about a tenth of a second."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backend import LocalBackend

__all__ = ["LocalBackend"]


def __getattr__(name: str) -> Any:
    if name == "LocalBackend":
        from .backend import LocalBackend

        return LocalBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
