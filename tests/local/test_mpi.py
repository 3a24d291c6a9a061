"""Horovod-style MPI jobs: the launcher's mpirun runs the ranks, mpi4py all-reduces."""

from __future__ import annotations

import re

import pytest

from tests.local.conftest import lines, submit, wait
from tests.support import require

pytestmark = pytest.mark.slow

ALLREDUCE = """
import os
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
assert comm.Get_rank() == rank and comm.Get_size() == world_size
assert os.environ["RANK"] == str(rank) and os.environ["WORLD_SIZE"] == str(world_size)
x = np.random.RandomState(rank).randn(32, 4)
y = x.sum(1)
w = np.zeros(4)
for step in range(20):
    grad = 2 * x.T @ (x @ w - y) / len(y)
    total = np.empty_like(grad)
    comm.Allreduce(grad, total, op=MPI.SUM)  # what hvd.allreduce does
    w -= 0.1 * total / world_size
    loss = float(((x @ w - y) ** 2).mean())
    first = loss if step == 0 else first
print(f"RESULT rank={rank} world={world_size} first={first:.5f} last={loss:.5f} w={np.round(w, 6).tolist()}")
"""


def test_mpi_allreduce_through_mpirun(backend):
    require.executable("mpirun")
    require.module("mpi4py")
    name = submit(backend, ALLREDUCE, "horovod", {"Launcher": 1, "Worker": 2})
    status = wait(backend, name, timeout=120)
    assert status.state.value == "Succeeded", status.message
    found = []
    for rid in ("worker-0", "worker-1"):  # each rank's output lands in its worker's log
        m = [
            re.search(r"RESULT rank=(\d+) world=(\d+) first=(\S+) last=(\S+) w=(.*)", t)
            for t in lines(backend, name, rid)
        ]
        found += [x.groups() for x in m if x]
    assert sorted(f[0] for f in found) == ["0", "1"] and {f[1] for f in found} == {"2"}
    assert all(float(f[3]) < float(f[2]) for f in found)
    assert len({f[4] for f in found}) == 1  # same weights on every rank
    assert {r.id: r.state.value for r in status.replicas} == {
        "launcher-0": "Succeeded", "worker-0": "Succeeded", "worker-1": "Succeeded"
    }  # fmt: skip
    assert (backend.job_dir(name) / "hostfile").read_text() == "localhost slots=2\n"


SPLIT_WRITES = """
import os, sys, time
# one line in two write() calls, far apart: mpirun tags each chunk it reads
os.write(1, f"raw piece one from {rank} ".encode())
time.sleep(0.3)
os.write(1, f"and piece two from {rank}\\n".encode())
print(f"long {rank} " + "x" * 9000, flush=True)  # longer than one pipe read
print(f"done {rank}", flush=True)
"""


def test_mpirun_chunk_tags_are_reassembled_into_each_ranks_lines(backend):
    require.executable("mpirun")
    name = submit(backend, SPLIT_WRITES, "horovod", {"Launcher": 1, "Worker": 2})
    status = wait(backend, name, timeout=120)
    assert status.state.value == "Succeeded", status.message
    for rank in (0, 1):
        got = lines(backend, name, f"worker-{rank}")
        assert f"raw piece one from {rank} and piece two from {rank}" in got
        assert f"long {rank} " + "x" * 9000 in got
        assert f"done {rank}" in got
        assert not any("<stdout>:" in t for t in got)
