"""A loopback HTTP proxy in front of a registry that fails chosen requests once, to
test retries against the real registry behind it."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests


class FlakyProxy:
    """A loopback HTTP proxy in front of a registry that fails chosen requests once:
    ``fail={(method, path_part): 503 | "drop"}``. Counts what it injected."""

    def __init__(self, upstream: str, fail: dict[tuple[str, str], int | str]) -> None:
        self.fail, self.injected = dict(fail), {k: 0 for k in fail}
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _body(self) -> bytes | None:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    parts = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            self.rfile.readline()
                            return b"".join(parts)
                        parts.append(self.rfile.read(size))
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else None

            def _any(self) -> None:
                body = self._body()
                for (method, part), how in proxy.fail.items():
                    if (
                        self.command == method
                        and part in self.path
                        and not proxy.injected[(method, part)]
                    ):
                        proxy.injected[(method, part)] += 1
                        if how == "drop":
                            self.close_connection = True
                            self.connection.shutdown(socket.SHUT_RDWR)
                            return
                        self.send_response(int(how))
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in ("host", "content-length", "transfer-encoding")
                }
                r = requests.request(
                    self.command,
                    f"http://{upstream}{self.path}",
                    headers=headers,
                    data=body,
                    allow_redirects=False,
                    timeout=30,
                )
                self.send_response(r.status_code)
                for k, v in r.headers.items():
                    if k.lower() not in (
                        "content-length",
                        "transfer-encoding",
                        "connection",
                        "content-encoding",
                    ):
                        self.send_header(k, v.replace(upstream, proxy.host))
                self.send_header(
                    "Content-Length",
                    str(len(r.content))
                    if self.command != "HEAD"
                    else r.headers.get("Content-Length", "0"),
                )
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(r.content)

            do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FlakyProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
