"""The installed backends' names, from the ``jupyter_ddl.backends`` entry points.

A leaf: the config checks a backend name here without importing a backend (the
registry, which loads the classes, imports the base class, and that the config).
"""

from __future__ import annotations

from importlib.metadata import entry_points

GROUP = "jupyter_ddl.backends"


def registered() -> dict[str, str]:
    """name -> ``module:Class`` of every installed backend."""
    return {ep.name: ep.value for ep in entry_points(group=GROUP)}


def backend_names() -> list[str]:
    """The installed backends' names, ``local`` first (the default of a fresh config)."""
    return sorted(registered(), key=lambda n: (n != "local", n))
