"""scripts/gpu-check on this GPU-less machine: with a fake one-GPU ``nvidia-smi`` the
refusal passes and every check that needs CUDA fails, so the table can say FAIL."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

from tests.support import require

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def gpu_check(tmp_path: Path, gpus: int) -> subprocess.CompletedProcess[str]:
    tool = tmp_path / "bin" / "nvidia-smi"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n" + "".join(f"echo {i}\n" for i in range(gpus)))
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env["PATH"] = f"{tool.parent}{os.pathsep}{env['PATH']}"
    env["PYTHON"] = __import__("sys").executable
    return subprocess.run(
        [str(ROOT / "scripts" / "gpu-check"), "--timeout", "90"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def rows(out: str) -> dict[str, str]:
    found = (re.match(r"^(.*?)\s{2,}(PASS|FAIL)\b", line) for line in out.splitlines())
    return {m.group(1): m.group(2) for m in found if m}


def test_without_cuda_the_table_fails_but_the_refusal_passes(tmp_path):
    require.module("torch")
    done = gpu_check(tmp_path, 1)
    assert done.returncode == 1, done.stderr[-2000:]
    got = rows(done.stdout)
    assert got["GPUs visible"] == "PASS" and got["one replica too many"] == "PASS", done.stdout
    assert got["torch-ddp --replicas 1 --gpus 1"] == "FAIL"
    assert got["torch-dp sees every GPU"] == "FAIL"
    assert "this machine has 1 (GPU 0)" in done.stdout


def test_no_gpu_at_all_is_a_failure(tmp_path):
    done = gpu_check(tmp_path, 0)
    assert done.returncode == 1 and "nvidia-smi lists none" in done.stdout
