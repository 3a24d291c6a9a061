"""Every endpoint asks jupyter_server's Authorizer about our resource, and obeys it."""

from __future__ import annotations

import pytest
from jupyter_server.auth import Authorizer
from tornado.httpclient import HTTPClientError

from jupyter_ddl.server.handlers import AUTH_RESOURCE

from .test_auth import _endpoints

pytestmark = pytest.mark.timeout(60)


class DenyDDL(Authorizer):
    """Authenticated users who may do everything except touch our resource."""

    def is_authorized(self, handler, user, action, resource):
        return resource != AUTH_RESOURCE


@pytest.fixture
def jp_server_config(data_dir):
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_ddl": True},
            "authorizer_class": DenyDDL,
        }
    }


@pytest.mark.parametrize("path,method", _endpoints())
async def test_unauthorized_is_refused(jp_fetch, path, method, fake_manager):
    body = b"" if method in ("POST", "PUT", "PATCH") else None
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch(path, method=method, body=body)
    assert info.value.code == 403
