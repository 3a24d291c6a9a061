"""More strategies on the local backend (CPU, real processes): torch-elastic through
torchrun's c10d rendezvous, deepspeed, torch-dp and the one-replica TF strategies."""

from __future__ import annotations

import importlib.util
import re

import pytest

from tests.local.conftest import lines, submit, wait
from tests.local.test_torch import SHIM_CELL, assert_trained_together, results
from tests.support import require

pytestmark = pytest.mark.slow


def test_torch_elastic_two_workers_rendezvous_and_train(backend):
    require.module("torch")
    probe = 'import os\nprint("ELASTIC", os.environ.get("TORCHELASTIC_RUN_ID"), os.environ.get("GROUP_RANK"))\n'
    name = submit(backend, probe + SHIM_CELL, "torch-elastic", {"Worker": 2})
    status = wait(backend, name, timeout=180)
    assert status.state.value == "Succeeded", status.message
    assert_trained_together(results(backend, name), 2)
    # each replica ran under its own torchrun agent, placed by the rendezvous
    probes = sorted(
        t for rid in ("worker-0", "worker-1") for t in lines(backend, name, rid) if "ELASTIC" in t
    )
    assert [p.split()[2] for p in probes] == ["0", "1"] and "None" not in probes[0], probes


def test_deepspeed_runs_with_or_without_deepspeed(backend):
    require.module("torch")
    name = submit(backend, SHIM_CELL, "deepspeed", {"Master": 1, "Worker": 1})
    status = wait(backend, name, timeout=180)
    assert status.state.value == "Succeeded", status.message
    assert_trained_together(results(backend, name), 2)
    fallback = [t for t in lines(backend, name, "master-0") if "deepspeed is not installed" in t]
    assert bool(fallback) == (importlib.util.find_spec("deepspeed") is None), fallback


DP_CELL = """
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.DataParallel(nn.Linear(8, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(64, 8)
y = x @ torch.arange(8.0).unsqueeze(1)
losses = []
for step in range(15):
    loss = ((model(x.to(device)) - y.to(device)) ** 2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    losses.append(loss.item())
print(f"RESULT dp={type(model).__name__} world={world_size} first={losses[0]:.5f} last={losses[-1]:.5f}")
"""


def test_torch_dp_one_replica(backend):
    require.module("torch")
    name = submit(backend, DP_CELL, "torch-dp", {"Master": 1})
    status = wait(backend, name, timeout=120)
    assert status.state.value == "Succeeded", status.message
    m = next(
        re.search(r"dp=(\w+) world=(\d+) first=(\S+) last=(\S+)", t)
        for t in lines(backend, name, "master-0")
        if t.startswith("RESULT")
    )
    assert m and m.group(1) == "DataParallel" and m.group(2) == "1"
    assert float(m.group(4)) < float(m.group(3))


TF_ONE = """
import numpy as np
import tensorflow as tf
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
x = np.random.RandomState(0).randn(64, 4).astype("float32")
hist = model.fit(x, x.sum(1, keepdims=True), epochs=3, batch_size=16, verbose=0)
loss = hist.history["loss"]
print(f"RESULT kind={strategy.__class__.__name__} sync={strategy.num_replicas_in_sync} "
      f"first={loss[0]:.5f} last={loss[-1]:.5f}")
"""


@pytest.mark.tensorflow
def test_tf_mirrored_and_central_storage_one_replica(backend):
    require.module("tensorflow")
    # both jobs at once: TF's import dominates, and they share nothing
    jobs = {
        s: submit(backend, TF_ONE, s, {"Worker": 1}) for s in ("tf-mirrored", "tf-central-storage")
    }
    want = {"tf-mirrored": "MirroredStrategy", "tf-central-storage": "CentralStorageStrategy"}
    for strategy, name in jobs.items():
        status = wait(backend, name, timeout=240)
        assert status.state.value == "Succeeded", (strategy, status.message)
        m = next(
            re.search(r"kind=(\w+) sync=(\d+) first=(\S+) last=(\S+)", t)
            for t in lines(backend, name, "worker-0")
            if t.startswith("RESULT")
        )
        assert m and m.group(1) == want[strategy] and m.group(2) == "1", m and m.group(0)
        assert float(m.group(4)) < float(m.group(3))
