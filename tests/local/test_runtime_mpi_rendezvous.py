"""Ranks that mpirun starts with no MASTER_ADDR (a TrainJob on Trainer's deepspeed runtime
launches them so) still get a torch.distributed group: the runtime finds rank 0 over MPI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import require

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
RANK = """
import os, sys, torch, torch.distributed as dist
from jupyter_ddl.runtime import ddl_runtime
ddl_runtime.setup_torch(dict(os.environ), '', 'deepspeed')
t = torch.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(t)
# one write: print's separate writes of each argument interleave between ranks under -u
sys.stdout.write(f'rank {dist.get_rank()} of {dist.get_world_size()} sum {t.item()}\\n')
sys.stdout.flush()
dist.destroy_process_group()  # as the runtime's teardown does: no gloo thread at exit
"""


def test_ranks_under_mpirun_without_master_addr_form_one_group():
    require.executable("mpirun")
    require.module("mpi4py")
    require.module("torch")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MASTER_", "RANK", "WORLD_"))}
    env["PYTHONPATH"] = str(ROOT)
    got = subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
         sys.executable, "-c", RANK],
        capture_output=True, text=True, timeout=180, env=env,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr[-2000:]
    for rank in (0, 1):
        assert f"rank {rank} of 2 sum 3.0" in got.stdout, got.stdout
