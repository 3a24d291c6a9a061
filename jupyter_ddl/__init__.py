"""jupyter-ddl: run a notebook cell as a distributed deep-learning job.

Importing this package imports no framework and no Kubernetes client; the magics,
backends and server extension are loaded when first used.
"""

from __future__ import annotations

from typing import Any

from jupyter_ddl._version import __version__


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jupyter_ddl``: registers ``%%distribute`` and ``%ddl``."""
    from jupyter_ddl.notebook.magics import load

    load(ipython)


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from jupyter_ddl.server.app import DDLServerApp

    return [{"module": "jupyter_ddl.server.app", "app": DDLServerApp}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "jupyter-ddl"}]


__all__ = ["__version__", "load_ipython_extension"]
