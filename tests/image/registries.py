"""Real CNCF distribution registries for the tests, in four variants.

``plain`` (no auth), ``basic`` (htpasswd, bcrypt cost 4), ``tls`` (a self-signed CA,
SAN IP:127.0.0.1 + DNS:localhost) and ``token`` (bearer tokens from a small token
server written here: RS256 JWTs with an x5c header). Each registry listens on a free
loopback port and writes its access log to a file the tests count requests from.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import os
import re
import secrets
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

USER, PASSWORD = "ddl-user", "s3cret-Pa55-word"
VARIANTS = ("plain", "basic", "tls", "token")
_ACCESS = re.compile(r'"(GET|HEAD|POST|PUT|PATCH|DELETE) (/v2/\S*) HTTP/[\d.]+" (\d{3})')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- certificates -----------------------------------------------------------------
def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject: str, key, issuer: str, issuer_key, *, ca: bool, san: bool) -> x509.Certificate:
    now = dt.datetime.now(dt.timezone.utc)
    b = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if san:
        alt = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
        b = b.add_extension(x509.SubjectAlternativeName(alt), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


@dataclass
class Certs:
    ca: Path  # the CA certificate clients trust
    cert: Path  # the server certificate
    key: Path
    cert_dir: Path  # a skopeo --cert-dir holding ca.crt


def make_certs(d: Path) -> Certs:
    d.mkdir(parents=True, exist_ok=True)
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca = _cert("jupyter-ddl test CA", ca_key, "jupyter-ddl test CA", ca_key, ca=True, san=False)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cert = _cert("localhost", key, "jupyter-ddl test CA", ca_key, ca=False, san=True)
    (d / "ca.pem").write_bytes(_pem(ca))
    (d / "server.pem").write_bytes(_pem(cert))
    (d / "server.key").write_bytes(_key_pem(key))
    cert_dir = d / "skopeo-certs"
    cert_dir.mkdir(exist_ok=True)
    (cert_dir / "ca.crt").write_bytes(_pem(ca))
    return Certs(d / "ca.pem", d / "server.pem", d / "server.key", cert_dir)


# -- the token server -------------------------------------------------------------
def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenServer:
    """Issues registry tokens for USER/PASSWORD; repositories under ``readonly/`` get
    pull only, so pushes there meet a real 403/401 from the registry."""

    issuer, service = "ddl-test-issuer", "ddl-test-registry"

    def __init__(self, d: Path) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.cert = _cert(
            "ddl token signer", self.key, "ddl token signer", self.key, ca=False, san=False
        )
        self.bundle = d / "token-root.pem"
        self.bundle.write_bytes(_pem(self.cert))
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:
                server.requests += 1
                want = f"Basic {base64.b64encode(f'{USER}:{PASSWORD}'.encode()).decode()}"
                if self.headers.get("Authorization") != want:
                    self.send_response(401)
                    self.end_headers()
                    return
                q = parse_qs(urlsplit(self.path).query)
                body = json.dumps(
                    {"token": server.token(q.get("scope", [])), "expires_in": 300}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.realm = f"http://127.0.0.1:{self.httpd.server_address[1]}/token"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def token(self, scopes: list[str]) -> str:
        access = []
        for s in scopes:
            for one in s.split(" "):
                kind, _, rest = one.partition(":")
                name, _, actions = rest.rpartition(":")
                allowed = [
                    a for a in actions.split(",") if a == "pull" or not name.startswith("readonly/")
                ]
                access.append({"type": kind, "name": name, "actions": allowed})
        now = int(time.time())
        header = {
            "typ": "JWT",
            "alg": "RS256",
            "x5c": [base64.b64encode(self.cert.public_bytes(serialization.Encoding.DER)).decode()],
        }
        claims = {
            "iss": self.issuer,
            "sub": USER,
            "aud": self.service,
            "exp": now + 300,
            "nbf": now - 10,
            "iat": now,
            "jti": secrets.token_hex(8),
            "access": access,
        }
        signing = _b64url(json.dumps(header).encode()) + "." + _b64url(json.dumps(claims).encode())
        sig = self.key.sign(signing.encode(), padding.PKCS1v15(), hashes.SHA256())
        return signing + "." + _b64url(sig)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# -- the registry process ---------------------------------------------------------
@dataclass
class Registry:
    variant: str
    host: str  # 127.0.0.1:PORT
    root: Path
    log: Path
    proc: subprocess.Popen[bytes]
    ca: Path | None = None
    cert_dir: Path | None = None
    token_server: TokenServer | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def needs_login(self) -> bool:
        return self.variant in ("basic", "token")

    @property
    def scheme(self) -> str:
        return "https" if self.variant == "tls" else "http"

    def access_lines(self, mark: int = 0) -> list[tuple[str, str, int]]:
        """(method, path, status) of every request logged since ``mark`` (a byte offset)."""
        with open(self.log, "rb") as f:
            f.seek(mark)
            text = f.read().decode(errors="replace")
        return [(m[1], m[2], int(m[3])) for m in _ACCESS.finditer(text)]

    def mark(self) -> int:
        time.sleep(0.05)  # let the registry flush lines of the previous request
        return self.log.stat().st_size

    def skopeo_flags(self, prefix: str) -> list[str]:
        """Flags for skopeo's --src-*/--dest-* side (or plain, prefix "") for this registry."""
        p = f"--{prefix}-" if prefix else "--"
        flags = [f"{p}cert-dir={self.cert_dir}"] if self.cert_dir else [f"{p}tls-verify=false"]
        if self.needs_login:
            flags.append(f"{p}creds={USER}:{PASSWORD}")
        return flags

    def docker_config(self, path: Path, password: str = PASSWORD) -> Path:
        """Write a docker config.json with this registry's login; returns its directory."""
        path.mkdir(parents=True, exist_ok=True)
        auth = base64.b64encode(f"{USER}:{password}".encode()).decode()
        (path / "config.json").write_text(json.dumps({"auths": {self.host: {"auth": auth}}}))
        return path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.token_server:
            self.token_server.close()


def _htpasswd(d: Path) -> Path:
    path = d / "htpasswd"
    out = subprocess.run(
        ["htpasswd", "-Bbn", "-C", "4", USER, PASSWORD], check=True, capture_output=True
    )
    path.write_bytes(out.stdout)
    return path


def _config(
    variant: str, d: Path, port: int, certs: Certs | None, token: TokenServer | None
) -> str:
    cfg: dict[str, object] = {
        "version": 0.1,
        "log": {"level": "warn", "accesslog": {"disabled": False}},
        "storage": {"filesystem": {"rootdirectory": str(d / "data")}, "delete": {"enabled": True}},
        "http": {"addr": f"127.0.0.1:{port}", "secret": "ddl-test-secret"},
    }
    if variant == "tls":
        assert certs
        cfg["http"] = {
            **cfg["http"],
            "tls": {"certificate": str(certs.cert), "key": str(certs.key)},
        }  # type: ignore[dict-item]
    if variant == "basic":
        cfg["auth"] = {"htpasswd": {"realm": "ddl-test", "path": str(_htpasswd(d))}}
    if variant == "token":
        assert token
        cfg["auth"] = {
            "token": {
                "realm": token.realm,
                "service": token.service,
                "issuer": token.issuer,
                "rootcertbundle": str(token.bundle),
            }
        }
    return json.dumps(cfg)  # YAML is a superset of JSON


def start_registry(variant: str, d: Path, certs: Certs | None = None) -> Registry:
    """Start ``docker-registry`` in ``variant`` under ``d``; waits until it answers."""
    d.mkdir(parents=True, exist_ok=True)
    token = TokenServer(d) if variant == "token" else None
    for _ in range(5):  # another process may take the port between bind and serve
        port = free_port()
        (d / "config.yml").write_text(_config(variant, d, port, certs, token))
        log = d / f"registry-{port}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                ["docker-registry", "serve", str(d / "config.yml")],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={"PATH": os.environ.get("PATH", "")},
            )
        reg = Registry(
            variant,
            f"127.0.0.1:{port}",
            d,
            log,
            proc,
            certs.ca if certs and variant == "tls" else None,
            certs.cert_dir if certs and variant == "tls" else None,
            token,
        )
        if _wait_ready(reg):
            return reg
        reg.stop()
    raise RuntimeError(f"docker-registry ({variant}) did not start; see {d}")


def _wait_ready(reg: Registry, timeout: float = 15.0) -> bool:
    url = f"{reg.scheme}://{reg.host}/v2/"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if reg.proc.poll() is not None:
            return False
        try:
            r = requests.get(url, verify=str(reg.ca) if reg.ca else False, timeout=2)
            # ours: the log file grows with our request and the process is alive
            if r.status_code in (200, 401) and reg.proc.poll() is None:
                time.sleep(0.1)
                return b"/v2/" in reg.log.read_bytes()
        except requests.RequestException:
            pass
        time.sleep(0.1)
    return False
