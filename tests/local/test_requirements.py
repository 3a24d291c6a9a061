"""Requirements from the bundle are pip-installed once per (requirements, interpreter)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.models import JobSpec, JobState
from tests.local.conftest import lines, wait


def make_wheel(where: Path) -> Path:
    """A real, minimal pure-Python wheel (pip installs it without any network)."""
    files = {
        "ddltinypkg/__init__.py": "VALUE = 42\n",
        "ddltinypkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: ddltinypkg\nVersion: 1.0\n",
        "ddltinypkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = (
            base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        )
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append("ddltinypkg-1.0.dist-info/RECORD,,")
    whl = where / "ddltinypkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
        z.writestr("ddltinypkg-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return whl


def _submit(backend, name: str, reqs: list[str]) -> None:
    code = "import ddltinypkg\nprint('value', ddltinypkg.VALUE)\n"
    spec = JobSpec(name=name, strategy="tf-mirrored", replicas={"Worker": 1})
    backend.submit(spec, build_bundle(code, requirements=reqs))


def test_requirements_installed_into_a_shared_cache(backend, data_dir, tmp_path):
    whl = make_wheel(tmp_path)
    _submit(backend, "req-a", [str(whl)])
    status = wait(backend, "req-a", timeout=120)
    assert status.state == JobState.SUCCEEDED, status.message
    assert lines(backend, "req-a", "worker-0") == ["value 42"]
    (cached,) = (data_dir / "requirements").glob("*/ddltinypkg/__init__.py")
    _submit(backend, "req-b", [str(whl)])
    assert wait(backend, "req-b", timeout=120).state == JobState.SUCCEEDED
    assert not (backend.job_dir("req-b") / "setup.log").exists()  # no second pip run
    assert cached.exists()


def test_failing_requirement_fails_the_job_with_pip_reason(backend, tmp_path):
    _submit(backend, "req-bad", [str(tmp_path / "missing-1.0-py3-none-any.whl")])
    status = wait(backend, "req-bad", timeout=120)
    assert status.state == JobState.FAILED
    assert "installing requirements" in status.message and "missing-1.0" in status.message
