"""The append image builder: notebook code as a deterministic layer on a base image,
pushed to a registry without a Docker daemon. Entry point: ``build_and_push``."""

from __future__ import annotations

from jupyter_ddl.image.builder import BuiltImage, build_and_push
from jupyter_ddl.image.layer import CODE_DIR, entry_command
from jupyter_ddl.image.progress import ProgressCallback, Stats, TextProgress

__all__ = [
    "CODE_DIR",
    "BuiltImage",
    "ProgressCallback",
    "Stats",
    "TextProgress",
    "build_and_push",
    "entry_command",
]
