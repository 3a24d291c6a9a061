"""The kubelet's containerLogs endpoint over HTTPS, which the apiserver proxies for
`pods/log`: GET /containerLogs/{namespace}/{pod}/{container} with follow, previous,
timestamps, sinceSeconds, sinceTime, tailLines and limitBytes."""

from __future__ import annotations

import http.server
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from datetime import datetime, timezone

from . import crilog
from .pods import PodRunner

# (namespace, pod name) -> its runner, or None
Lookup = Callable[[str, str], "PodRunner | None"]


def int_arg(q: dict[str, list[str]], key: str) -> int | None:
    if key not in q:
        return None
    value = int(q[key][0])
    if value < 0:
        raise ValueError(f"{key} must not be negative")
    return value


def since_arg(q: dict[str, list[str]]) -> float | None:
    """The cutoff of sinceSeconds or sinceTime (RFC 3339, as the apiserver passes it),
    in epoch seconds; None when neither is given."""
    seconds = int_arg(q, "sinceSeconds")
    if seconds is not None:
        return time.time() - seconds
    if "sinceTime" not in q:
        return None
    text = q["sinceTime"][0]
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"sinceTime {text!r} is not an RFC 3339 time") from None
    return t.astimezone(timezone.utc).timestamp()


def make_handler(lookup: Lookup) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt: str, *args: object) -> None:  # quiet: the apiserver logs calls
            pass

        def _plain(self, code: int, text: str) -> None:
            body = text.encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            parts = url.path.strip("/").split("/")
            if len(parts) != 4 or parts[0] != "containerLogs":
                self._plain(404, "not found")
                return
            _, ns, name, container = parts
            q = urllib.parse.parse_qs(url.query)
            try:
                tail_lines = int_arg(q, "tailLines")
                limit = int_arg(q, "limitBytes")
                cutoff = since_arg(q)
            except ValueError as e:
                self._plain(400, str(e))
                return
            follow = q.get("follow", ["false"])[0] == "true"
            previous = q.get("previous", ["false"])[0] == "true"
            timestamps = q.get("timestamps", ["false"])[0] == "true"
            runner = lookup(ns, name)
            if runner is None or container not in runner.statuses:
                self._plain(404, f'container "{container}" in pod "{name}" is not available')
                return
            restart = runner.statuses[container].get("restartCount", 0) - (1 if previous else 0)
            if restart < 0:
                self._plain(
                    400, f'previous terminated container "{container}" in pod "{name}" not found'
                )
                return
            path = runner.log_path(container, restart)
            if not path.exists():
                self._plain(
                    400,
                    f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating',
                )
                return
            recs = crilog.read_all(path)
            start = path.stat().st_size
            if cutoff is not None:
                recs = crilog.since(recs, cutoff)
            if tail_lines is not None:
                recs = crilog.tail(recs, tail_lines)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            sent = [0]

            def emit(data: bytes) -> bool:
                if limit is not None:
                    data = data[: max(0, limit - sent[0])]
                if data:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                    sent[0] += len(data)
                return limit is None or sent[0] < limit

            try:
                going = emit(crilog.render(recs, timestamps))
                if follow and going and not previous:
                    alive = lambda: runner.running(container, restart)  # noqa: E731
                    for r in crilog.follow(path, start, alive):
                        if not emit(crilog.render([r], timestamps)):
                            break
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler


def serve(
    host: str, port: int, cert: str, key: str, lookup: Lookup
) -> http.server.ThreadingHTTPServer:
    srv = http.server.ThreadingHTTPServer((host, port), make_handler(lookup))
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True, name="kubelet-api").start()
    return srv
