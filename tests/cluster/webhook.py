"""A validating admission webhook for the real tier, served from the test process: it
denies the creation of pods whose name contains a given part, as a policy engine
(Kyverno, Gatekeeper) would. Its certificate is signed by the tier's CA (scripts/cluster
makes it under .cluster/pki), and the API server reaches it by URL on 127.0.0.1.
"""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.cluster.tier import STATE

PKI = STATE / "pki"


class RefusingWebhook:
    #: the webhook's name, which the API server puts in its answer
    NAME = "refuse-pods.jupyter-ddl.test"

    def __init__(self, tmp: Path, message: str, match: str) -> None:
        self.message, self.match = message, match
        self.seen: list[str] = []
        cert, key = _sign(tmp)
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self._answer(hook.review(body["request"]))

            def _answer(self, response: dict[str, Any]) -> None:
                data = json.dumps({"apiVersion": "admission.k8s.io/v1",
                                   "kind": "AdmissionReview", "response": response}).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        self.config_name = f"jddl-refuse-{uuid.uuid4().hex[:6]}"

    def review(self, request: dict[str, Any]) -> dict[str, Any]:
        obj = request.get("object") or {}
        md = obj.get("metadata") or {}
        # a controller's pod may come with generateName only; the name is set later
        name = md.get("name") or md.get("generateName") or ""
        self.seen.append(name)
        if self.match in name:
            return {"uid": request["uid"], "allowed": False,
                    "status": {"code": 403, "message": self.message}}  # fmt: skip
        return {"uid": request["uid"], "allowed": True}

    def configuration(self, namespace: str) -> dict[str, Any]:
        ca = base64.b64encode((PKI / "ca.crt").read_bytes()).decode()
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": self.config_name},
            "webhooks": [{
                "name": self.NAME,
                "clientConfig": {"url": f"https://127.0.0.1:{self.port}/validate", "caBundle": ca},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                           "resources": ["pods"]}],
                # only the scenario's namespace; a dead test process lets pods through
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "failurePolicy": "Ignore",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 5,
            }],
        }  # fmt: skip

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _sign(tmp: Path) -> tuple[Path, Path]:
    """A serving certificate for 127.0.0.1, signed by the tier's CA."""
    key, csr, crt, ext = (tmp / f"webhook.{s}" for s in ("key", "csr", "crt", "ext"))
    ext.write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    subprocess.run(["openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-subj", "/CN=refuse-pods", "-out", str(csr)], check=True, capture_output=True)  # fmt: skip
    subprocess.run(["openssl", "x509", "-req", "-in", str(csr), "-CA", str(PKI / "ca.crt"),
                    "-CAkey", str(PKI / "ca.key"), "-CAcreateserial", "-CAserial", str(tmp / "ca.srl"),
                    "-days", "1", "-sha256", "-extfile", str(ext), "-out", str(crt)],
                   check=True, capture_output=True)  # fmt: skip
    key.chmod(0o600)
    return crt, key
