"""The extension's URL patterns and the handler of each: apart from handlers.py,
since the catalog and event handlers build on its DDLHandler."""

from __future__ import annotations

from jupyter_server.utils import url_path_join

from jupyter_ddl.server.catalog import StrategiesHandler
from jupyter_ddl.server.handlers import (
    NAMESPACE,
    BackendsHandler,
    CancelHandler,
    DDLHandler,
    JobHandler,
    JobsHandler,
    LogsHandler,
    MetricsHandler,
    OpenAPIHandler,
)
from jupyter_ddl.server.job_stream import JobEventsHandler

_JOB = r"(?P<name>[^/]+)"


def routes(base_url: str = "/") -> list[tuple[str, type[DDLHandler]]]:
    """URL patterns → handlers, under ``base_url`` (the ExtensionApp adds the server's)."""

    def url(*parts: str) -> str:
        return url_path_join(base_url, NAMESPACE, *parts)

    return [
        (url("openapi.json"), OpenAPIHandler),
        (url("backends"), BackendsHandler),
        (url("strategies"), StrategiesHandler),
        (url("events"), JobEventsHandler),
        (url("jobs"), JobsHandler),
        (url("jobs", _JOB), JobHandler),
        (url("jobs", _JOB, "cancel"), CancelHandler),
        (url("jobs", _JOB, "logs"), LogsHandler),
        (url("jobs", _JOB, "metrics"), MetricsHandler),
    ]
