"""One registry host's HTTP session: the only code of the package that talks to a
registry.

It finds the scheme with its first request (HTTPS; plain HTTP only for insecure and
loopback registries), authenticates (anonymous, basic, or a bearer token for the scopes
it was given), retries 5xx, 429 and dropped connections with backoff, counts requests
and bytes, and turns every failure into a one-line ``RegistryError``. Credentials never
reach a message or a log. ``registry.RegistryClient`` adds the manifest and blob calls.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests

from jupyter_ddl.errors import RegistryError
from jupyter_ddl.i18n import tr
from jupyter_ddl.image.auth import (
    Challenge,
    basic_header,
    merge_scopes,
    parse_challenge,
    token_request,
)
from jupyter_ddl.image.credentials import Credential, CredentialStore
from jupyter_ddl.image.progress import Stats
from jupyter_ddl.image.reference import is_loopback
from jupyter_ddl.image.registry_errors import (
    error_code,
    http_failure,
    retry_after,
    tls_failure,
    token_failure,
    unreachable,
)

log = logging.getLogger(__name__)


_RETRY_STATUS = (429, 500, 502, 503, 504)
#: host → the scheme that worked, so later builds skip the HTTPS probe of a plain registry
_SCHEMES: dict[str, str] = {}


class RegistrySession:
    """Sends authenticated requests to one registry host (``host:port``) for a set of
    repository scopes."""

    def __init__(
        self,
        host: str,
        *,
        credentials: CredentialStore | None = None,
        insecure: bool = False,
        ca: str | None = None,
        scopes: Iterable[str] = (),
        retries: int = 3,
        backoff: float = 0.2,
        timeout: float = 60.0,
        stats: Stats | None = None,
    ) -> None:
        self.host = host
        self.insecure = insecure
        self.stats = stats or Stats()
        self._cred: Credential | None = credentials.get(host) if credentials else None
        self._verify: bool | str = False if insecure else (ca or True)
        self._scopes = set(scopes)
        self._retries, self._backoff, self._timeout = retries, backoff, timeout
        self._session = requests.Session()
        self._session.trust_env = False  # REQUESTS_CA_BUNDLE would override verify=
        self._base: str | None = None
        self._challenge: Challenge | None = None
        self._auth: str | None = None
        self._auth_lock = threading.Lock()  # the push's threads share one token

    # -- connection and auth ------------------------------------------------
    def _probe(self, method: str, path: str, **kw: Any) -> requests.Response:
        """Send the first request, finding the scheme on the way: HTTPS, then plain HTTP
        for insecure and loopback registries. No separate ping: the first real request
        carries the auth challenge, which saves a round trip on every build."""
        schemes = ["https"]
        if self.insecure or is_loopback(self.host):
            schemes.append("http")
        # loopback traffic never leaves the machine: plain HTTP first spares a TLS probe
        # (an HTTPS registry tells a plain request so); remembered for later builds too
        if _SCHEMES.get(self.host, "http" if is_loopback(self.host) else "https") == "http":
            schemes.reverse()
        for i, scheme in enumerate(schemes):
            last = i == len(schemes) - 1
            try:
                resp = self._send(method, f"{scheme}://{self.host}{path}", retry_connect=last, **kw)
            except requests.exceptions.SSLError as e:
                if "CERTIFICATE_VERIFY_FAILED" in str(e) or last:
                    raise tls_failure(self.host, e) from None
                continue  # a plain-HTTP server answering a TLS hello
            except requests.exceptions.ConnectionError:
                if last:
                    raise unreachable(self.host) from None
                continue
            if resp.status_code == 400 and not last and (scheme == "https" or _tls_only(resp)):
                continue  # the other scheme is the one this server speaks
            self._base, _SCHEMES[self.host] = f"{scheme}://{self.host}", scheme
            return resp
        raise AssertionError("unreachable")

    def _authorization(self) -> str | None:
        with self._auth_lock:
            ch = self._challenge
            if ch is None or self._auth is not None:
                return self._auth
            if ch.scheme == "basic":
                if self._cred is None:
                    raise RegistryError(
                        tr("registry {host} needs a login (401)", host=self.host),
                        hint=tr(
                            "run `docker login {host}` or configure a registry secret",
                            host=self.host,
                        ),
                    )
                self._auth = basic_header(self._cred)
            elif ch.scheme == "bearer":
                self._auth = "Bearer " + self._fetch_token(ch)
            else:
                raise RegistryError(
                    tr(
                        "registry {host} uses unsupported auth {scheme!r}",
                        host=self.host,
                        scheme=ch.scheme,
                    )
                )
        return self._auth

    def _fetch_token(self, ch: Challenge) -> str:
        realm = ch.realm
        if not realm:
            raise RegistryError(
                tr("registry {host} sent a bearer challenge without a realm", host=self.host)
            )
        scopes = merge_scopes(
            self._scopes | ({ch.params["scope"]} if "scope" in ch.params else set())
        )
        req = token_request(ch, scopes, self._cred)
        self.stats.count(token_requests=1)
        verify = self._verify if urlsplit(realm).netloc == self.host else True
        try:
            resp = self._session.request(
                req.method,
                realm,
                params=req.params,
                data=req.data,
                headers=req.headers,
                timeout=self._timeout,
                verify=verify,
            )
        except requests.exceptions.SSLError as e:
            raise tls_failure(self.host, e) from None
        except requests.exceptions.RequestException:
            raise unreachable(f"{self.host} (token service)") from None
        if resp.status_code != 200:
            raise token_failure(self.host, resp.status_code, logged_in=self._cred is not None)
        try:
            body = resp.json()
            return str(body.get("token") or body["access_token"])
        except (ValueError, KeyError):
            raise RegistryError(
                tr("the token service of registry {host} sent no token", host=self.host)
            ) from None

    # -- the one request path -----------------------------------------------
    def _send(
        self, method: str, url: str, *, retry_connect: bool = True, **kw: Any
    ) -> requests.Response:
        """One HTTP exchange with retries; counts every exchange that got an answer."""
        replayable = not callable(getattr(kw.get("data"), "__next__", None))
        attempts = self._retries + 1 if replayable else 1
        for attempt in range(attempts):
            try:
                resp = self._session.request(
                    method,
                    url,
                    timeout=self._timeout,
                    verify=self._verify,
                    allow_redirects=False,
                    **kw,
                )
            except requests.exceptions.SSLError:
                raise
            except (requests.exceptions.ConnectionError, requests.exceptions.Timeout):
                if not retry_connect or attempt == attempts - 1:
                    raise
                time.sleep(self._backoff * 2**attempt)
                continue
            self.stats.count(requests=1)
            body = kw.get("data")
            if isinstance(body, (bytes, bytearray)):
                self.stats.count(bytes_up=len(body))
            if resp.status_code in _RETRY_STATUS and attempt < attempts - 1:
                resp.close()
                time.sleep(
                    retry_after(resp.headers.get("Retry-After")) or self._backoff * 2**attempt
                )
                continue
            return resp
        raise AssertionError("unreachable")

    def request(
        self, method: str, path: str, *, what: str, ok: tuple[int, ...], **kw: Any
    ) -> requests.Response:
        """Send ``method path`` (a ``/v2/...`` path or an absolute upload URL) with auth;
        returns the response when its status is in ``ok``, else raises RegistryError."""
        for again in (True, False):
            headers = dict(kw.pop("headers", None) or {})
            auth = self._authorization()
            if auth:
                headers["Authorization"] = auth
            try:
                if self._base is None:
                    resp = self._probe(method, path, headers=headers, **kw)
                else:
                    url = path if path.startswith(("http://", "https://")) else self._base + path
                    resp = self._send(method, url, headers=headers, **kw)
            except requests.exceptions.SSLError as e:
                raise tls_failure(self.host, e) from None
            except requests.exceptions.RequestException:
                raise unreachable(self.host, what) from None
            kw["headers"] = {k: v for k, v in headers.items() if k != "Authorization"}
            if resp.status_code == 401 and again and self._learn_challenge(resp):
                continue
            if resp.status_code in ok:
                if not kw.get("stream"):
                    self.stats.count(bytes_down=len(resp.content))
                return resp
            self._fail(resp, what)
        raise AssertionError("unreachable")

    def _learn_challenge(self, resp: requests.Response) -> bool:
        """After a 401: True when trying again can help (first challenge, or a bearer
        token to fetch again for an expired token or a wider scope)."""
        ch = parse_challenge(resp.headers.get("WWW-Authenticate"))
        if ch is None:
            return False
        with self._auth_lock:
            if ch.scheme == "basic" and self._auth is not None:
                return False  # the credentials we sent were refused
            if "scope" in ch.params:
                self._scopes.add(ch.params["scope"])
            self._challenge, self._auth = ch, None
        return True

    def _fail(self, resp: requests.Response, what: str) -> None:
        # token registries answer 401 "insufficient_scope" where the account lacks a right
        if "insufficient_scope" in resp.headers.get("WWW-Authenticate", ""):
            raise http_failure(self.host, 403, what, logged_in=True)
        raise http_failure(
            self.host,
            resp.status_code,
            what,
            logged_in=self._cred is not None,
            detail=error_code(resp.content),
        )

    def _location(self, resp: requests.Response) -> str:
        loc = resp.headers.get("Location")
        if not loc:
            raise RegistryError(
                tr("registry {host} opened an upload without a Location", host=self.host)
            )
        assert self._base is not None
        return urljoin(self._base + "/", loc)

    def close(self) -> None:
        self._session.close()


def _tls_only(resp: requests.Response) -> bool:
    """A TLS server's answer to plain HTTP (Go: "Client sent an HTTP request to an
    HTTPS server"; nginx: "The plain HTTP request was sent to HTTPS port")."""
    return "https" in resp.text[:300].lower()
