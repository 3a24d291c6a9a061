"""The append image builder: notebook code as a deterministic layer on a base image,
pushed to a registry without a Docker daemon. Entry point: ``build_and_push``."""

from __future__ import annotations

from .builder import BuiltImage, build_and_push
from .layer import CODE_DIR, entry_command
from .progress import ProgressCallback, Stats, TextProgress

__all__ = [
    "CODE_DIR",
    "BuiltImage",
    "ProgressCallback",
    "Stats",
    "TextProgress",
    "build_and_push",
    "entry_command",
]
