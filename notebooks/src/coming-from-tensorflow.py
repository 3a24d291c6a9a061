# %% [markdown] title
# # Coming from a TensorFlow script, or from Kubeflow Fairing
#
# Most distributed TensorFlow code you will meet was written as a script for the TFJob
# operator: it builds its own `MultiWorkerMirroredStrategy`, reads nothing but the
# `TF_CONFIG` the operator sets, and is started once per replica. This notebook runs
# that shape unchanged through `%%distribute`, and then maps Kubeflow Fairing (the
# notebook-to-TFJob SDK many teams used) onto what jupyter-ddl does.

# %%
%load_ext jupyter_ddl

# %% [markdown] script
# ## 1. The Keras MultiWorkerMirrored script, unchanged
#
# The usual structure: a function that builds and compiles the model, and a `main`
# that creates the strategy **first** (before any other TensorFlow call: its
# collectives are configured when the program starts), builds the model inside
# `strategy.scope()` and calls `fit`. By hand you would start it on every machine with
# a different `TF_CONFIG`:
# `{"cluster": {"worker": [...]}, "task": {"type": "worker", "index": 0}}` on the
# first, index 1 on the second. The operator, and here the local backend, does that
# for you. The data is generated, standing in for MNIST.
#
# jupyter-ddl sees that the cell builds its own strategy and leaves it alone.

# %%
%%distribute --strategy tf-multi-worker-mirrored --workers 2 --wait
import json
import os

import numpy as np
import tensorflow as tf


def build_and_compile_cnn_model():
    model = tf.keras.Sequential([
        tf.keras.Input((28, 28, 1)),
        tf.keras.layers.Conv2D(8, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(10),
    ])
    model.compile(
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        optimizer=tf.keras.optimizers.SGD(learning_rate=0.05),
        metrics=["accuracy"],
    )
    return model


def main():
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    print(f"{task['type']} {task['index']}: {strategy.num_replicas_in_sync} replicas in sync")
    rng = np.random.RandomState(0)
    images = rng.rand(1024, 28, 28, 1).astype("float32")
    labels = (images.mean(axis=(1, 2, 3)) * 10).astype("int64") % 10  # learnable
    dataset = tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(64)
    with strategy.scope():
        multi_worker_model = build_and_compile_cnn_model()
    history = multi_worker_model.fit(dataset, epochs=2, steps_per_epoch=8, verbose=2)
    report(loss=history.history["loss"][-1], workers=strategy.num_replicas_in_sync)


main()

# %%
from jupyter_ddl import default_manager

jobs = default_manager()
keras = jobs.results(_ddl_job)  # the job's state and each replica's report(...)
keras

# %% [markdown] script-result
# Both workers report the same loss and `2 replicas in sync`: one model, trained by
# two processes in lock step.
#
# ## 2. Kubeflow Fairing, and what replaces it here
#
# Fairing was a Python SDK from the Kubeflow project for "build, train and deploy from
# a notebook". The repository is archived: it is no longer maintained and targets old
# Kubeflow versions. Its three steps map onto jupyter-ddl like this:
#
# | Fairing | what it did | jupyter-ddl |
# |---|---|---|
# | **preprocessor** (`python`, `notebook`, `full_notebook`, `function`) | chose the files to ship: a script, the notebook converted to Python, or one function with a generated shim | **capture**: the cell plus the earlier definitions it uses, the runtime shim and an entry point (`cell.py`, `ddl_runtime*.py`, `ddl_spawn.py`, `main.py`); `!pip install` lines become requirements |
# | **builder** `docker` / `cluster` | built an image with a local Docker daemon, or in the cluster | not needed |
# | **builder** `append` | appended the files as one new layer to a base image and pushed only that layer, with no Docker daemon | the **image builder**: the same idea, one deterministic layer appended to the framework's base image; base layers are mounted registry-side, never downloaded (see `laptop-to-cluster.ipynb`) |
# | **deployer** `tfjob`, `pytorchjob` (+ `pod_spec_mutators` for GPUs, CPU, memory, volumes) | created the job object and streamed its logs | **submit**: TFJob / PyTorchJob / MPIJob / TrainJob from the `%%distribute` flags (`--gpus`, `--cpu`, `--memory`...), logs of every replica in the cell |
#
# A Fairing notebook set the builder's `base_image` and `registry`; here they are
# configuration (`%ddl config registry=...`, `base_images`). Its deployer call with
# `chief_count`, `worker_count`, `ps_count` and resource mutators becomes one line.
# `--dry-run` shows the TFJob the Keras script above would get on a cluster, with a
# Chief, two Workers and one GPU, 4 CPUs and 8 GiB each:

# %%
%%distribute --strategy tf-multi-worker-mirrored --chief 1 --workers 2 --gpus 1 --cpu 4 --memory 8Gi --dry-run
import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()

# %% [markdown] fairing-steps
# The three steps are also plain Python, for scripts (this is what the magic did for
# the dry run above): capture → bundle, bundle → image layer, spec → objects.

# %%
import yaml

from jupyter_ddl import JobSpec, build_bundle, build_layer

bundle = build_bundle("import tensorflow as tf\nstrategy = tf.distribute.MultiWorkerMirroredStrategy()\n")
layer = build_layer(bundle)  # "preprocess" + "append": the files, as one layer
spec = JobSpec(name="fairing-style", strategy="tf-multi-worker-mirrored",
               replicas={"Chief": 1, "Worker": 2})
objects = [d for d in yaml.safe_load_all(jobs.dry_run(spec, bundle)) if d]  # "deploy"
print("files:", sorted(bundle.files), "| layer", layer.digest[:19], f"{layer.size} bytes")
print("objects:", [d["kind"] for d in objects])

# %% [markdown] ex-ps
# ### Try this
#
# Fairing's example deployed a ParameterServer TFJob
# (`chief_count=1, worker_count=2, ps_count=1`). Write the `%%distribute` line for it
# with `--dry-run`.
# **Expected:** a TFJob whose `tfReplicaSpecs` has `Chief` with 1 replica, `Worker`
# with 2 and `PS` with 1, every container named `tensorflow`.

# %% solution
%%distribute --strategy tf-parameter-server --chief 1 --workers 2 --ps 1 --dry-run
import tensorflow as tf

# %% [markdown] summary
# ## What we saw
#
# (The test suite checks these values.)

# %%
outcome = {
    "keras_state": keras.state,
    "keras_workers": sorted(keras.latest),
    "keras_in_sync": sorted({int(n) for n in keras.values("workers")}),
    "keras_losses_agree": len({round(loss, 5) for loss in keras.values("loss")}) == 1,
    "fairing_kinds": [d["kind"] for d in objects],
    "bundle_files": sorted(bundle.files),
}
outcome["ok"] = (
    outcome["keras_state"] == "Succeeded"
    and outcome["keras_workers"] == ["worker-0", "worker-1"]
    and outcome["keras_in_sync"] == [2]
    and outcome["keras_losses_agree"]
    and outcome["fairing_kinds"][0] == "TFJob"
)
outcome
