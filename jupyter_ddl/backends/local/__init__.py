"""The local backend: every replica a process on this machine (the embedded default).

``LocalBackend`` is loaded on first use: a supervisor imports its modules of this
package without the kernel side's (backend, events, registry), which would add about
50 ms to every cold job's start-up."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jupyter_ddl.backends.local.backend import LocalBackend

__all__ = ["LocalBackend"]


def __getattr__(name: str) -> Any:
    if name == "LocalBackend":
        from jupyter_ddl.backends.local.backend import LocalBackend

        return LocalBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
