"""The local backend: every replica a process on this machine (the embedded default)."""

from __future__ import annotations

from .backend import LocalBackend

__all__ = ["LocalBackend"]
