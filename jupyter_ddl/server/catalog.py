"""``GET /jupyter-ddl/strategies``: the strategy catalog, for the "Distribute this cell"
dialog, so the front end keeps no list of its own.

Each strategy comes with what the dialog needs to offer it (framework, title, how
many replicas ``--replicas`` may ask for) and the import hints that let the dialog
propose one from the notebook's imports. Which strategies a backend runs is in
``GET /backends`` (its capabilities).
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ddl.core.strategies import (
    CATALOG,
    FRAMEWORK_TITLES,
    FRAMEWORKS,
    IMPORT_HINTS,
    Strategy,
)
from jupyter_ddl.server.handlers import DDLHandler


def replicas_range(strategy: Strategy) -> tuple[int, int | None]:
    """(fewest, most) replicas ``--replicas N`` may give; most is None when unbounded."""
    counted = strategy.counted_roles
    low = max(1, sum(r.min for r in counted))
    maxima = [r.max for r in counted]
    return low, None if any(m is None for m in maxima) else sum(m for m in maxima if m)


def strategy_dict(strategy: Strategy) -> dict[str, Any]:
    low, high = replicas_range(strategy)
    return {
        "name": strategy.name,
        "framework": strategy.framework,
        "title": strategy.title,
        "summary": strategy.summary,
        "kind": strategy.kind.name,  # the Kind object: its operator spelling
        "replicas": {"default": strategy.default_total, "min": low, "max": high},
        "gpus": any(r.gpu for r in strategy.roles),
        "needs_tpu": strategy.needs_tpu,
    }


def catalog() -> dict[str, Any]:
    """Frameworks, strategies (catalog order) and import hints, as the REST API answers."""
    return {
        "frameworks": [{"name": f, "title": FRAMEWORK_TITLES[f]} for f in FRAMEWORKS],
        "strategies": [strategy_dict(s) for s in CATALOG.values()],
        "import_hints": [{"module": m, "strategy": s} for m, s in IMPORT_HINTS],
    }


class StrategiesHandler(DDLHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """The strategy catalog (no backend is asked: it is the same for all)."""
        self.reply(catalog())
