"""TensorFlow (CPU) on the local backend: multi-worker all-reduce and parameter servers."""

from __future__ import annotations

import re

import pytest

from tests.local.conftest import lines, submit, wait
from tests.support import require

pytestmark = [pytest.mark.slow, pytest.mark.tensorflow]

FIT = """
import numpy as np
import tensorflow as tf
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
x = np.random.RandomState(rank).randn(64, 4).astype("float32")
y = x.sum(1, keepdims=True)
opts = tf.data.Options()
opts.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16).repeat().with_options(opts)
hist = model.fit(ds, epochs=3, steps_per_epoch=4, verbose=2)
loss = hist.history["loss"]
print(f"RESULT rank={rank} sync={strategy.num_replicas_in_sync} first={loss[0]:.5f} "
      f"last={loss[-1]:.5f} w={float(np.sum(model.get_weights()[0])):.6f}")
"""

# Written for the TFJob operator: reads TF_CONFIG and builds its own strategy.
OWN_STRATEGY = """
import json, os
import tensorflow as tf
task = json.loads(os.environ["TF_CONFIG"])["task"]
rank = task["index"]
strategy = tf.distribute.MultiWorkerMirroredStrategy()
""" + FIT.replace("import numpy as np\nimport tensorflow as tf\n", "import numpy as np\n")

_RESULT = re.compile(r"RESULT rank=(\d+) sync=(\d+) first=(\S+) last=(\S+) w=(\S+)")


def _results(backend, name, replicas):
    found = []
    for rid in replicas:
        m = next((_RESULT.search(t) for t in lines(backend, name, rid) if _RESULT.search(t)), None)
        assert m, (rid, lines(backend, name, rid)[-10:])
        found.append(m.groups())
    return found


@pytest.mark.parametrize("cell", [FIT, OWN_STRATEGY], ids=["shim-strategy", "own-strategy"])
def test_multi_worker_mirrored_two_workers(backend, cell):
    require.module("tensorflow")
    name = submit(backend, cell, "tf-multi-worker-mirrored", {"Worker": 2})
    status = wait(backend, name, timeout=240)
    assert status.state.value == "Succeeded", status.message
    found = _results(backend, name, ["worker-0", "worker-1"])
    assert sorted(r[0] for r in found) == ["0", "1"] and {r[1] for r in found} == {"2"}
    assert all(float(r[3]) < float(r[2]) for r in found), found
    assert len({r[4] for r in found}) == 1, "weights differ between workers"


PS_CELL = """
import tensorflow as tf
coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
with strategy.scope():
    w = tf.Variable(tf.zeros([4, 1]))
    b = tf.Variable(0.0)

def dataset_fn():
    x = tf.random.stateless_normal([256, 4], seed=[1, 2])
    return tf.data.Dataset.from_tensor_slices((x, tf.reduce_sum(x, 1, keepdims=True))).batch(16).repeat()

iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))

@tf.function
def step(it):
    def fn(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.matmul(x, w) + b - y) ** 2)
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(0.1 * gw)
        b.assign_sub(0.1 * gb)
        return loss
    x, y = next(it)
    return strategy.run(fn, args=(x, y))

losses = [coordinator.schedule(step, args=(iterator,)) for _ in range(40)]
coordinator.join()
values = [float(l.fetch()) for l in losses]
print(f"RESULT first={values[0]:.5f} last={values[-1]:.5f} on={w.device}")
"""


def test_parameter_server_chief_worker_ps(backend):
    require.module("tensorflow")
    name = submit(backend, PS_CELL, "tf-parameter-server", {"Chief": 1, "Worker": 1, "PS": 1})
    status = wait(backend, name, timeout=240)
    assert status.state.value == "Succeeded", status.message
    m = next(
        re.search(r"RESULT first=(\S+) last=(\S+) on=(\S+)", t)
        for t in lines(backend, name, "chief-0")
        if "RESULT" in t
    )
    assert m and float(m.group(2)) < float(m.group(1)) and "/job:ps" in m.group(3)
    assert any("ps 0 serving" in t for t in lines(backend, name, "ps-0"))
    states = {r.id: r.state.value for r in status.replicas}
    assert states == {"chief-0": "Succeeded", "worker-0": "Terminated", "ps-0": "Terminated"}


# Regression: a TF op runs before the cell first touches the shim's `strategy`.
# MWMS must configure collectives before the eager context starts, so the shim
# creates it at startup; lazily it failed with "Collective ops must be configured
# at program startup".
TF_OP_FIRST = """
import tensorflow as tf
tf.constant(1.)
n = strategy.num_replicas_in_sync
total = strategy.reduce("SUM", strategy.run(lambda: tf.constant(float(rank + 1))), axis=None)
print(f"SYNC rank={rank} n={n} sum={float(total)}")
"""


def test_multi_worker_mirrored_after_a_tf_op(backend):
    require.module("tensorflow")
    name = submit(backend, TF_OP_FIRST, "tf-multi-worker-mirrored", {"Worker": 2})
    status = wait(backend, name, timeout=240)
    assert status.state.value == "Succeeded", status.message
    got = sorted(
        t for rid in ("worker-0", "worker-1") for t in lines(backend, name, rid) if "SYNC" in t
    )
    assert got == ["SYNC rank=0 n=2 sum=3.0", "SYNC rank=1 n=2 sum=3.0"], got
