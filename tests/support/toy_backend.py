"""The toy backend of docs/adding-a-backend.md: a package outside jupyter_ddl that
registers a backend through the ``jupyter_ddl.backends`` entry point. It runs each
replica's cell in a thread (the tests' in-memory backend), under its own name."""

from __future__ import annotations

from jupyter_ddl.config import Config
from tests.support.fake_backend import FakeBackend


class ToyBackend(FakeBackend):
    """What the registry builds for ``backend="toy"``: ``ToyBackend(config=...)``."""

    name = "toy"

    def __init__(self, config: Config | None = None) -> None:
        super().__init__(config, run_code=True, name="toy")
