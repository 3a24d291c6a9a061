"""PyTorch on the local backend: real DDP over gloo in separate processes (CPU)."""

from __future__ import annotations

import re

import pytest

from tests.local.conftest import lines, submit, wait
from tests.support import require

pytestmark = pytest.mark.slow

# Uses only the shim's conveniences: no init_process_group of its own.
SHIM_CELL = """
import hashlib
import torch, torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
torch.manual_seed(0)
model = DDP(nn.Linear(8, 1).to(device))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(100 + rank)  # every rank sees different data
x = torch.randn(64, 8, generator=g)
y = x @ torch.arange(8.0).unsqueeze(1)
losses = []
for step in range(15):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    losses.append(loss.item())
    report(step=step, loss=loss)
blob = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
print(f"RESULT rank={rank} local={local_rank} world={world_size} "
      f"first={losses[0]:.5f} last={losses[-1]:.5f} params={hashlib.sha256(blob).hexdigest()}")
"""

# Written for the PyTorchJob operator: sets everything up itself, reads only env.
OPERATOR_CELL = """
import hashlib, os
import torch, torch.distributed as dist, torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
dist.init_process_group(backend="gloo")
rank, world = dist.get_rank(), dist.get_world_size()
assert rank == int(os.environ["RANK"]) and world == int(os.environ["WORLD_SIZE"])
torch.manual_seed(0)
ds = TensorDataset(torch.randn(96, 4), torch.randn(96, 1))
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=8, sampler=sampler)
model = DistributedDataParallel(nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
first = last = None
for epoch in range(3):
    sampler.set_epoch(epoch)
    for xb, yb in loader:
        loss = nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad(); loss.backward(); opt.step()
        first = loss.item() if first is None else first
        last = loss.item()
blob = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
print(f"RESULT rank={rank} local=0 world={world} first={first:.5f} last={last:.5f} "
      f"params={hashlib.sha256(blob).hexdigest()} batches={len(loader)}")
dist.destroy_process_group()
"""

_RESULT = re.compile(
    r"RESULT rank=(\d+) local=(\d+) world=(\d+) first=(\S+) last=(\S+) params=(\w+)"
)


def results(backend, name) -> list[tuple[int, int, int, float, float, str]]:
    out = []
    for rid in backend.get(name).replicas:
        for text in lines(backend, name, rid.id):
            m = _RESULT.search(text)
            if m:
                r, lr, w, a, b, p = m.groups()
                out.append((int(r), int(lr), int(w), float(a), float(b), p))
    return sorted(out)


def assert_trained_together(found, world: int) -> None:
    assert [r[0] for r in found] == list(range(world)), found
    assert {r[2] for r in found} == {world}
    assert all(last < first for _, _, _, first, last, _ in found), found
    assert len({r[5] for r in found}) == 1, "parameters differ between ranks"


@pytest.mark.parametrize("workers", [1, 2])
def test_ddp_over_gloo_trains_in_step(backend, workers):
    require.module("torch")
    name = submit(backend, SHIM_CELL, "torch-ddp", {"Master": 1, "Worker": workers})
    status = wait(backend, name)
    assert status.state.value == "Succeeded", status.message
    found = results(backend, name)
    assert_trained_together(found, workers + 1)
    # the latest report() value of some rank reached the status
    assert any(abs(status.metrics["loss"] - r[4]) < 1e-4 for r in found), status.metrics


def test_torchrun_two_processes_per_replica(backend):
    require.module("torch")
    name = submit(backend, SHIM_CELL, "torch-ddp", {"Master": 1, "Worker": 0}, nproc_per_node=2)
    status = wait(backend, name)
    assert status.state.value == "Succeeded", status.message
    found = results(backend, name)
    assert_trained_together(found, 2)
    assert sorted(r[1] for r in found) == [0, 1]  # local ranks from torchrun


def test_operator_style_cell_runs_unchanged(backend):
    require.module("torch")
    name = submit(backend, OPERATOR_CELL, "torch-ddp", {"Master": 1, "Worker": 1})
    status = wait(backend, name)
    assert status.state.value == "Succeeded", status.message
    assert_trained_together(results(backend, name), 2)
    assert any("batches=6" in t for t in lines(backend, name, "worker-0"))  # 96 / 2 ranks / 8


IGNITE_CELL = """
import ignite.distributed as idist

def training(local_rank):
    t = idist.all_reduce(idist.get_rank() + 1.0)  # 1 + 2 over two ranks
    print(f"IGNITE rank={idist.get_rank()} world={idist.get_world_size()} "
          f"backend={idist.backend()} sum={float(t)}", flush=True)

with idist.Parallel(backend="gloo") as parallel:
    parallel.run(training)
"""


def test_ignite_parallel_cell_runs_unchanged(backend):
    require.module("ignite")
    name = submit(backend, IGNITE_CELL, "ignite", {"Master": 1, "Worker": 1})
    status = wait(backend, name)
    assert status.state.value == "Succeeded", status.message
    got = sorted(
        t
        for rid in ("master-0", "worker-0")
        for t in lines(backend, name, rid)
        if t.startswith("IGNITE")
    )
    assert got == [
        "IGNITE rank=0 world=2 backend=gloo sum=3.0",
        "IGNITE rank=1 world=2 backend=gloo sum=3.0",
    ]
