"""Fixtures for the notebook tests: an IPython shell (no kernel) with the magics loaded
over a JobManager whose "local" backend is the in-memory FakeBackend."""

from __future__ import annotations

import pytest

from jupyter_ddl.config import Config
from jupyter_ddl.manager import JobManager
from tests.support.fake_backend import FakeBackend


@pytest.fixture
def fake(data_dir):
    return FakeBackend(config=Config())


@pytest.fixture
def manager(fake):
    m = JobManager(config=Config(log_tail=50, refresh_hz=10), backends={"local": fake})
    yield m
    m.close()


@pytest.fixture
def shell(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setenv("JUPYTER_DDL_WIDGETS", "0")
    sh = InteractiveShell.instance()
    sh.reset(new_session=True)
    yield sh
    sh.reset(new_session=True)


@pytest.fixture
def magics(shell, manager):
    from jupyter_ddl.notebook.magics import load

    m = load(shell, manager=manager)
    yield m
    for dash in m.dashboards.values():
        dash.detach()
        dash.wait(5)


def run(shell, source: str) -> None:
    """Execute a cell the way a notebook does (stored in history); fail on errors."""
    result = shell.run_cell(source, store_history=True)
    result.raise_error()
