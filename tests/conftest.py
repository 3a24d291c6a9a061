from __future__ import annotations

import pytest


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """An isolated jupyter-ddl data directory (jobs, config) for one test."""
    d = tmp_path / "ddl-data"
    d.mkdir()
    monkeypatch.setenv("JUPYTER_DDL_DATA_DIR", str(d))
    return d
