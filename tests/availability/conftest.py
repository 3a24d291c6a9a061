"""A data directory holding one finished local job (real replica processes), shared by
the tests of this folder: every test checks that this job stays listed and findable
whatever the Kubernetes backend does."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

LOCAL_JOB = "still-here"


@pytest.fixture(scope="package")
def local_jobs(tmp_path_factory) -> Iterator[Path]:
    """``JUPYTER_DDL_DATA_DIR`` with one Succeeded local job named ``LOCAL_JOB``."""
    from jupyter_ddl.backends.local import LocalBackend
    from jupyter_ddl.config import Config
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.models import JobSpec

    d = tmp_path_factory.mktemp("ddl-data")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_DDL_DATA_DIR", str(d))
        b = LocalBackend(Config())
        spec = JobSpec(name=LOCAL_JOB, strategy="tf-mirrored", replicas={"Worker": 1})
        b.submit(spec, build_bundle("print('local replica ran')\n"))
        deadline = time.monotonic() + 120
        while not b.get(LOCAL_JOB).state.finished:
            assert time.monotonic() < deadline, "the local job did not finish"
            time.sleep(0.2)
        assert b.get(LOCAL_JOB).state.value == "Succeeded"
        b.close()
        yield d


@pytest.fixture
def isolated(local_jobs, monkeypatch, tmp_path) -> Path:
    """This test's environment: the shared local job, no kubeconfig, not in a pod."""
    monkeypatch.setenv("JUPYTER_DDL_DATA_DIR", str(local_jobs))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return local_jobs
