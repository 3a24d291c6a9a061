"""``DDLServerApp``: the jupyter_server extension serving the jobs REST API.

It owns one ``JobManager`` (the one job API) for the server process; every handler
reaches jobs through it. Enabled by ``jupyter-config/.../jupyter_ddl.json``, which
``pip install`` puts in place.
"""

from __future__ import annotations

import threading

from jupyter_server.extension.application import ExtensionApp
from traitlets import Unicode

from jupyter_ddl._version import __version__
from jupyter_ddl.config import load_config
from jupyter_ddl.manager import JobManager
from jupyter_ddl.server.routes import routes


class DDLServerApp(ExtensionApp):
    """Distributed-training jobs over REST, for the JupyterLab sidebar."""

    name = "jupyter_ddl"
    version = __version__
    description = "jupyter-ddl: distributed training jobs, their logs and metrics"
    load_other_extensions = True

    default_backend = Unicode(
        None,
        allow_none=True,
        config=True,
        help="Backend for jobs named without one (default: the user's jupyter-ddl config).",
    )

    def initialize_settings(self) -> None:
        config = load_config()
        if self.default_backend:
            config.backend = self.default_backend
        self.manager = JobManager(config)
        self._streams: set[threading.Event] = set()
        self.settings.update({"ddl_manager": self.manager, "ddl_streams": self._streams})

    def initialize_handlers(self) -> None:
        self.handlers.extend(routes())

    async def stop_extension(self) -> None:
        # End every live log stream so their reader threads do not outlive the server.
        for stop in list(self._streams):
            stop.set()
        self.manager.close()
