"""Real DDP training (torch, gloo, CPU) through the Kubernetes backend: the operator
double injects the PyTorchJob environment from ``jupyter_ddl.core.contract``, the shipped
runtime shim sets up the process group, and both pods' logs and metrics come back."""

from __future__ import annotations

import re
import threading
import uuid

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.models import EventKind, JobSpec, JobState
from tests.support.require import module

pytestmark = pytest.mark.slow

CELL = """
import hashlib
import torch, torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
torch.manual_seed(0)
model = DDP(nn.Linear(8, 1).to(device))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(100 + rank)
x = torch.randn(32, 8, generator=g)
y = x @ torch.arange(8.0).unsqueeze(1)
for step in range(5):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    report(step=step, loss=loss)
blob = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
print(f"RESULT rank={rank} world={world_size} params={hashlib.sha256(blob).hexdigest()}")
"""


def test_ddp_over_gloo_on_two_pods(backend):
    module("torch")
    spec = JobSpec(name=f"ddp-{uuid.uuid4().hex[:6]}", strategy="torch-ddp",
                   replicas={"Master": 1, "Worker": 1}, dist_backend="gloo")  # fmt: skip
    backend.submit(spec, build_bundle(CELL))
    stop = threading.Event()
    timer = threading.Timer(120, stop.set)
    timer.start()
    try:
        events = list(backend.watch(spec.name, stop=stop))
    finally:
        timer.cancel()
    texts = [e.log.text for e in events if e.kind == EventKind.LOG]
    results = sorted(
        m.groups()
        for t in texts
        if (m := re.search(r"RESULT rank=(\d) world=(\d) params=(\w+)", t))
    )
    assert [r[:2] for r in results] == [("0", "2"), ("1", "2")], texts[-20:]
    assert results[0][2] == results[1][2]  # all-reduced gradients: identical weights
    steps = [e.step for e in events if e.kind == EventKind.METRIC and e.replica == "master-0"]
    assert steps == [0, 1, 2, 3, 4]
    assert events[-1].status.state == JobState.SUCCEEDED
