"""REST handlers: thin, authenticated, all on the one job API (``JobManager``).

The contract is written down in docs/rest-api.md. Domain errors (``errors.DDLError``)
become their ``http_status`` with a one-line JSON message in ONE place,
``DDLHandler.send_error``; no handler catches them itself. Blocking job-API calls
run on the executor so a slow backend (a cluster far away) never stalls the server.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from collections.abc import Callable
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from jupyter_ddl import i18n
from jupyter_ddl._util import jsonsafe
from jupyter_ddl.errors import DDLError
from jupyter_ddl.manager import JobManager
from jupyter_ddl.models import LogLine
from jupyter_ddl.server import answers as views
from jupyter_ddl.server.sse import resume_offset, stream_logs

#: the authorization resource every handler checks (jupyter_server's Authorizer)
AUTH_RESOURCE = "jupyter_ddl"
#: URL namespace, under the server's base URL
NAMESPACE = "jupyter-ddl"
#: most lines one non-following log request returns; ask again from next_offset
MAX_LOG_LINES = 10_000
#: most text one page carries (a few long lines must not make a huge answer)
MAX_LOG_BYTES = 4 << 20

T = TypeVar("T")


class DDLHandler(APIHandler):
    """Base of every handler: the manager, the executor, and error mapping."""

    auth_resource = AUTH_RESOURCE

    @property
    def manager(self) -> JobManager:
        manager: JobManager = self.settings["ddl_manager"]
        return manager

    async def prepare(self) -> None:  # type: ignore[override]  # as APIHandler.prepare
        # the answer's messages in the language the client asks for (the lab sends
        # JupyterLab's); a client that names none gets the config's or the locale's.
        # A context variable, as jupyter_server's own CallContext: the handler's task
        # keeps it through the method that follows
        i18n.ask(i18n.from_accept_language(self.request.headers.get("Accept-Language")))
        await super().prepare()

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking job-API call off the event loop (in this request's context, so
        its messages keep the request's language)."""
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        return await loop.run_in_executor(None, lambda: context.run(fn, *args, **kwargs))

    def arg(self, name: str) -> str | None:
        value = self.get_query_argument(name, None)
        return value if value else None

    def reply(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(jsonsafe.dumps(data))

    def send_error(self, status_code: int = 500, **kwargs: Any) -> None:
        """The one place domain errors meet HTTP: a DDLError answers its own status."""
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, DDLError):
            status_code = exc.http_status
        super().send_error(status_code, **kwargs)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if not isinstance(exc, DDLError):
            super().write_error(status_code, **kwargs)
            return
        body: dict[str, Any] = {"error": type(exc).__name__, "message": str(exc)}
        problems = getattr(exc, "problems", None)
        if problems:
            body["problems"] = problems
        self.set_header("Content-Type", "application/json")
        self.finish(jsonsafe.dumps(body))

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        # A domain error is an answer, not a server fault: one line, no traceback.
        if isinstance(value, DDLError):
            self.log.info("jupyter-ddl %s %s: %s", self.request.method, self.request.path, value)
            return
        super().log_exception(typ, value, tb)


OPENAPI = Path(__file__).with_name("openapi.json")


class OpenAPIHandler(DDLHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """The OpenAPI document of these routes (docs/rest-api.md is its prose)."""
        self.reply(json.loads(OPENAPI.read_text()))


class BackendsHandler(DDLHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """Every backend, whether it is available, and its capabilities."""
        default = self.manager.config.backend
        out = await self.call(_backends, self.manager, default)
        self.reply({"default": default, "backends": out})


def _backends(manager: JobManager, default: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in manager.backend_names():
        entry: dict[str, Any] = {"name": name, "default": name == default}
        try:
            caps = manager.backend(name).capabilities()
        except DDLError as e:  # one unavailable backend must not hide the others
            entry |= {"available": False, "error": str(e), "capabilities": None}
        else:
            entry |= {"available": True, "error": None}
            entry["capabilities"] = views.capabilities_dict(caps)
        out.append(entry)
    return out


class JobsHandler(DDLHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """Jobs of every backend (or ``backend=``), filtered by ``state`` and ``notebook``,
        and the backends that could not be asked."""
        states = views.parse_states(self.arg("state"))
        listing = await self.call(
            self.manager.listing, backend=self.arg("backend"), notebook=self.arg("notebook")
        )
        self.reply(views.job_list(listing, states))


class JobHandler(DDLHandler):
    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        """Job detail: summary, replicas, spec summary, latest metrics, allowed actions."""
        status = await self.call(self.manager.get, name, self.arg("backend"))
        spec = await self.call(self.manager.spec, name, status.backend)
        caps = await self.call(lambda: self.manager.backend(status.backend).capabilities())
        self.reply(views.job_detail(status, spec, caps))

    @web.authenticated
    @authorized
    async def delete(self, name: str) -> None:
        """Cancel if running, then forget the job and its data."""
        await self.call(self.manager.delete, name, self.arg("backend"))
        self.set_status(204)
        self.finish()


class CancelHandler(DDLHandler):
    @web.authenticated
    @authorized
    async def post(self, name: str) -> None:
        status = await self.call(self.manager.cancel, name, self.arg("backend"))
        self.reply(views.job_summary(status))


class LogsHandler(DDLHandler):
    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        """Log lines from ``offset`` (per replica) or the last ``tail``; ``follow=true``
        answers server-sent events until the job ends."""
        replica = self.arg("replica")
        offset = views.parse_int(self.arg("offset"), "offset", default=0) or 0
        tail = views.parse_int(self.arg("tail"), "tail", default=None)
        backend = self.arg("backend")
        if views.parse_bool(self.arg("follow")):
            resumed = resume_offset(self.request.headers.get("Last-Event-ID"), replica)
            await self._follow(name, backend, replica, offset if resumed is None else resumed)
            return
        limit = views.parse_int(self.arg("limit"), "limit", default=MAX_LOG_LINES, minimum=1)
        limit = min(limit or MAX_LOG_LINES, MAX_LOG_LINES)
        lines = await self.call(
            read_lines, self.manager, name, backend, replica, offset, tail=tail, limit=limit
        )
        size = sum(len(line.text) for line in lines)
        self.reply(
            {
                "lines": [views.log_dict(line) for line in lines],
                "next_offsets": views.next_offsets(lines, offset),
                "limited": len(lines) == limit or size >= MAX_LOG_BYTES,
            }
        )

    async def _follow(
        self, name: str, backend: str | None, replica: str | None, offset: int
    ) -> None:
        # Resolve the job before the first byte: a missing job is still a JSON 404.
        found = await self.call(self.manager.find, name, backend)
        stop = threading.Event()
        self._stop = stop
        streams: set[threading.Event] = self.settings["ddl_streams"]
        streams.add(stop)
        try:
            lines = await self.call(
                self.manager.logs,
                name,
                backend=found.name,
                replica=replica,
                offset=offset,
                follow=True,
                stop=stop,
            )
            final = lambda: views.job_summary(self.manager.get(name, found.name))  # noqa: E731
            await stream_logs(self, lines, stop, final)
        finally:
            streams.discard(stop)
        self.finish()

    def on_connection_close(self) -> None:
        stop = getattr(self, "_stop", None)
        if stop is not None:
            stop.set()


class MetricsHandler(DDLHandler):
    @web.authenticated
    @authorized
    async def get(self, name: str) -> None:
        """Metric points parsed (by the shared parser) from one replica's log, from
        ``offset``: the chart asks again from ``next_offset``."""
        backend = self.arg("backend")
        offset = views.parse_int(self.arg("offset"), "offset", default=0) or 0
        status = await self.call(self.manager.get, name, backend)
        replica = self.arg("replica") or views.default_metrics_replica(status)
        if replica is None:
            self.reply({"replica": None, "points": [], "next_offset": offset})
            return
        lines = await self.call(
            # raw: the report() lines are where the metrics are
            read_lines,
            self.manager,
            name,
            status.backend,
            replica,
            offset,
            limit=MAX_LOG_LINES,
            raw=True,
        )
        self.reply(
            {
                "replica": replica,
                "points": views.metric_points(lines),
                "next_offset": views.next_offsets(lines, offset).get(replica, offset),
            }
        )


def read_lines(
    manager: JobManager,
    name: str,
    backend: str | None,
    replica: str | None,
    offset: int,
    *,
    tail: int | None = None,
    limit: int = MAX_LOG_LINES,
    raw: bool = False,
) -> list[LogLine]:
    """At most ``limit`` lines already written (no follow), and about ``MAX_LOG_BYTES``
    of text; stops the backend's reader as soon as enough were read."""
    stop = threading.Event()
    it = manager.logs(
        name, backend=backend, replica=replica, offset=offset, tail=tail, stop=stop, raw=raw
    )
    out: list[LogLine] = []
    size = 0
    try:
        for line in islice(it, limit):
            out.append(line)
            size += len(line.text)
            if size >= MAX_LOG_BYTES:
                break
        return out
    finally:
        stop.set()
