from __future__ import annotations

import os

import pytest

# The suite checks the product's English wording (the source of its messages): a
# developer's Korean or Japanese locale must not change what the kernels it starts print.
# The language tests (tests/i18n, tests/notebook/test_language.py) set their own.
os.environ["LANGUAGE"] = "en"

# jp_fetch / jp_serverapp for tests/server (plugins may only be named at the top level)
pytest_plugins = ["pytest_jupyter.jupyter_server"]


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """An isolated jupyter-ddl data directory (jobs, config) for one test; the warm
    interpreters its torch jobs started are stopped at its end."""
    from jupyter_ddl.backends.local import warm

    d = tmp_path / "ddl-data"
    d.mkdir()
    monkeypatch.setenv("JUPYTER_DDL_DATA_DIR", str(d))
    yield d
    warm.stop_spares(warm.warm_dir(d))
