"""Every endpoint refuses requests that are not authenticated or not authorized."""

from __future__ import annotations

import re

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_ddl.server.handlers import DDLHandler
from jupyter_ddl.server.routes import routes

pytestmark = pytest.mark.timeout(60)

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
#: routes that answer a stream kept open until the client leaves
STREAMS = {"jupyter-ddl/events"}


def _endpoints():
    """(url path, method) for every route and every method its handler implements."""
    out = []
    for pattern, handler in routes():
        path = re.sub(r"\(\?P<\w+>[^)]*\)", "some-job", pattern).lstrip("/")
        for method in METHODS:
            if getattr(handler, method.lower()) is not getattr(DDLHandler, method.lower()):
                out.append((path, method))
    return out


def test_every_route_is_enumerated():
    # guards the enumeration itself: if routes() grows, this list must be extended
    found = {(p.replace("jupyter-ddl/", ""), m) for p, m in _endpoints()}
    assert found == {
        ("openapi.json", "GET"),
        ("backends", "GET"),
        ("strategies", "GET"),
        ("events", "GET"),
        ("jobs", "GET"),
        ("jobs/some-job", "GET"),
        ("jobs/some-job", "DELETE"),
        ("jobs/some-job/cancel", "POST"),
        ("jobs/some-job/logs", "GET"),
        ("jobs/some-job/metrics", "GET"),
    }


def _registered_handlers(web_app):
    """Every handler class of ours the running server actually routes to."""
    found, rules = set(), list(web_app.default_router.rules)
    while rules:
        rule = rules.pop()
        target = rule.target
        if hasattr(target, "rules"):  # nested routers (wildcard router, extensions)
            rules.extend(target.rules)
        elif isinstance(target, type) and target.__module__.startswith("jupyter_ddl"):
            found.add(target)
    return found


def test_the_server_routes_only_enumerated_handlers(jp_serverapp):
    assert _registered_handlers(jp_serverapp.web_app) == {h for _, h in routes()}


@pytest.mark.parametrize("path,method", _endpoints())
async def test_unauthenticated_is_refused(jp_fetch, path, method, fake_manager):
    fake_manager.backend("local")  # a job API is there: a refusal is not a 404
    body = b"" if method in ("POST", "PUT", "PATCH") else None
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch(path, method=method, body=body, headers={"Authorization": ""})
    assert info.value.code == 403
    # the same request with the token is not refused (404: "some-job" does not exist)
    if path in STREAMS:  # never ends by itself: read its status line, then hang up
        status: list[str] = []
        with pytest.raises(HTTPClientError) as gave_up:
            await jp_fetch(
                path,
                method=method,
                header_callback=status.append,
                streaming_callback=lambda _: None,
                request_timeout=1.0,
            )
        assert gave_up.value.code == 599 and " 200 " in status[0]
        return
    try:
        r = await jp_fetch(path, method=method, body=body)
        assert r.code in (200, 204)
    except HTTPClientError as e:
        assert e.code == 404
