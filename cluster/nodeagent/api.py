"""A small Kubernetes API client over HTTPS with a bearer token (standard library only:
the agent runs on the machine's python3, beside no virtual environment)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any


class ApiError(Exception):
    def __init__(self, code: int, body: str) -> None:
        super().__init__(f"{code}: {body[:300]}")
        self.code = code


class Api:
    def __init__(self, server: str, token: str, ca_file: str) -> None:
        self.server = server.rstrip("/")
        self._token = token
        self._ctx = ssl.create_default_context(cafile=ca_file)

    def call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self._token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self._ctx, timeout=30) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            raise ApiError(e.code, e.read().decode(errors="replace")) from None
        return json.loads(raw) if raw else None

    def get(self, path: str) -> Any:
        return self.call("GET", path)

    def merge_patch(self, path: str, body: Any) -> Any:
        return self.call("PATCH", path, body, "application/merge-patch+json")
