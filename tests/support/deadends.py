"""Kubernetes API servers that never give an answer the client can use, each on
127.0.0.1: a closed port, a port that accepts and stays silent, a server answering
401 (an expired token), a TLS server whose certificate the kubeconfig does not trust.
Plus kubeconfig files pointing at them."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_kubeconfig(path: Path, server: str, *, insecure: bool = False) -> Path:
    cluster: dict[str, object] = {"server": server}
    if insecure:
        cluster["insecure-skip-tls-verify"] = True
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "gone", "cluster": cluster}],
        "users": [{"name": "me", "user": {"token": "expired-token"}}],
        "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "me"}}],
        "current-context": "gone",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def closed_port_url() -> str:
    """An https URL nothing listens on (connection refused at once)."""
    return f"https://127.0.0.1:{free_port()}"


@contextmanager
def silent_server() -> Iterator[str]:
    """Accepts connections and never answers (a hung API server): read timeouts."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            held.append(conn)

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        stop.set()
        t.join(5)
        for c in held:
            c.close()
        sock.close()


class _Refuse(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        body = json.dumps(UNAUTHORIZED).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_PATCH = do_PUT = do_DELETE = do_GET


@contextmanager
def http_server(*, tls_dir: Path | None = None) -> Iterator[str]:
    """Answers 401 Unauthorized to everything; with ``tls_dir``, over TLS with a
    certificate from a CA no kubeconfig trusts."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuse)
    scheme = "http"
    if tls_dir is not None:
        from tests.image.registries import make_certs

        certs = make_certs(tls_dir)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(certs.cert, certs.key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        t.join(5)
