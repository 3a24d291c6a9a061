"""Fixtures for the local backend's tests: a backend on an isolated data dir that
cancels whatever is still running at teardown, and small submit/wait helpers.

``DDL_TEST_WARM=1`` runs every test of this folder that uses a data dir with a warm
interpreter ready in it before the test starts, so torch jobs take the warm path (the
suite passes unchanged that way too); by default a test's first torch job is cold.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import psutil
import pytest

from jupyter_ddl.backends.local import LocalBackend, warm
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.models import JobSpec, JobStatus
from tests.backend_contract import default_make_job


@pytest.fixture(autouse=True)
def _warm_first(request):
    if os.environ.get("DDL_TEST_WARM") != "1" or "data_dir" not in request.fixturenames:
        return
    ready_spare(request.getfixturevalue("data_dir"))


def ready_spare(data_dir: Path, timeout: float = 120, module: str = "torch") -> int:
    """Start a warm interpreter of ``module`` in ``data_dir`` (unless one runs) and wait
    until it listens; returns its pid."""
    root = warm.warm_dir(data_dir)
    proc = warm.start_spare(root, 600, os.environ, module=module)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        socks = [s for s in root.glob("*.sock") if _imports(root / f"{s.stem}.json", module)]
        if socks:
            return int(socks[0].stem)
        if proc is not None and proc.poll() is not None:
            log = (root / "spare.log").read_text()
            raise AssertionError(f"the warm interpreter exited: {log[-2000:]}")
        time.sleep(0.1)
    raise AssertionError(f"no warm interpreter listened in {timeout} s")


def _imports(record: Path, module: str) -> bool:
    try:
        return json.loads(record.read_text()).get("module") == module
    except (OSError, ValueError):
        return False


@pytest.fixture
def backend(data_dir):
    b = LocalBackend()
    yield b
    for status in b.list():
        if not status.state.finished:
            b.cancel(status.name)


@pytest.fixture
def make_job():
    return default_make_job


def submit(
    backend: LocalBackend, code: str, strategy: str, replicas: dict[str, int], **fields
) -> str:
    """Submit ``code`` as a job; returns its (unique) name."""
    name = fields.pop("name", None) or f"t-{uuid.uuid4().hex[:8]}"
    backend.submit(
        JobSpec(name=name, strategy=strategy, replicas=replicas, **fields), build_bundle(code)
    )
    return name


def wait(backend: LocalBackend, name: str, timeout: float = 150) -> JobStatus:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = backend.get(name)
        if status.state.finished:
            return status
        time.sleep(0.25)
    raise AssertionError(f"{name} did not finish in {timeout}s: {backend.get(name)}")


def lines(backend: LocalBackend, name: str, replica: str) -> list[str]:
    return [line.text for line in backend.logs(name, replica=replica)]


def wait_line(
    backend: LocalBackend, name: str, replica: str, text: str, timeout: float = 120
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(text in t for t in lines(backend, name, replica)):
            return
        assert not backend.get(name).state.finished, backend.get(name)
        time.sleep(0.2)
    raise AssertionError(f"{replica} of {name} never printed {text!r}")


def job_processes(job_dir, pids=()) -> list[psutil.Process]:
    """Live processes that belong to a job: started from its bundle or its supervisor,
    carrying its name or directory in their environment, or among ``pids`` (what the
    job's cells reported they started, e.g. with an emptied environment)."""
    marker = str(job_dir)
    out = []
    for p in psutil.process_iter(["cmdline", "environ"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
            env = p.info["environ"] or {}
            if p.status() == psutil.STATUS_ZOMBIE:
                continue
        except psutil.Error:
            continue
        if (
            marker in cmd
            or env.get("JUPYTER_DDL_JOB") == job_dir.name
            or env.get("JUPYTER_DDL_JOB_DIR") == marker
            or p.pid in pids
        ):
            out.append(p)
    return out
