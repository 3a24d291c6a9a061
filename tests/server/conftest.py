from __future__ import annotations

import json

import pytest


@pytest.fixture
def jp_server_config(data_dir):
    """The server with our extension enabled (and its data dir isolated per test)."""
    return {"ServerApp": {"jpserver_extensions": {"jupyter_ddl": True}}}


@pytest.fixture
def ddl_app(jp_serverapp):
    """The running DDLServerApp."""
    from jupyter_ddl.server.app import DDLServerApp

    for ext in jp_serverapp.extension_manager.extension_apps.get("jupyter_ddl", []):
        if isinstance(ext, DDLServerApp):
            return ext
    raise AssertionError("the jupyter_ddl server extension did not load")


@pytest.fixture
def fake_manager(ddl_app):
    """Swap the app's manager for one on the in-memory FakeBackend."""
    from jupyter_ddl.manager import JobManager
    from tests.support.fake_backend import FakeBackend

    fake = FakeBackend(run_code=True)
    manager = JobManager(config=ddl_app.manager.config, backends={"local": fake})
    ddl_app.serverapp.web_app.settings["ddl_manager"] = manager
    yield manager
    manager.close()


async def get_json(jp_fetch, *parts, **kwargs):
    r = await jp_fetch(*parts, **kwargs)
    return json.loads(r.body) if r.body else None
