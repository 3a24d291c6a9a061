# %% [markdown] title
# # TensorFlow: four strategies, one training function
#
# `tf.distribute` hides the distribution behind a **strategy** object: you build and
# compile the model inside `strategy.scope()` and Keras does the rest. This notebook
# runs the *same* training function under four strategies and only changes the
# `%%distribute` line:
#
# | strategy | processes | how gradients move |
# |---|---|---|
# | `tf-mirrored` | 1 | all-reduce between the GPUs of one machine (here: two logical CPUs) |
# | `tf-central-storage` | 1 | variables kept in one place (the CPU), computed on every GPU |
# | `tf-multi-worker-mirrored` | N workers | synchronous all-reduce between processes |
# | `tf-parameter-server` | chief + workers + PS | workers push updates to parameter servers, asynchronously |
#
# Inside every replica a name `strategy` is ready: the strategy that matches the
# `--strategy` flag, created the first time the cell touches it.

# %%
%load_ext jupyter_ddl

# %% [markdown] training-function
# ## The training function
#
# A linear model learns `y = x · [1..8]` from 2,048 generated samples. The data is
# built inside the function, so nothing has to be downloaded. TensorFlow is imported
# inside the function too: the notebook's own kernel never loads it, only the replicas
# do.
#
# This cell runs in the notebook kernel and only *defines* `train`. When a later
# `%%distribute` cell calls `train(strategy)`, jupyter-ddl ships this definition along
# with that cell.

# %%
def train(strategy, epochs=4, steps=25):
    """Fit a one-layer model under `strategy`; returns the last epoch's loss."""
    import numpy as np
    import tensorflow as tf

    # Touch the strategy before any other TensorFlow op: MultiWorkerMirrored must
    # configure its collectives when the program starts.
    print(f"{strategy.num_replicas_in_sync} replica(s) in sync")
    rng = np.random.RandomState(0)
    x = rng.rand(2048, 8).astype("float32")
    y = (x @ np.arange(1, 9, dtype="float32"))[:, None]
    data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(2048, seed=0).repeat().batch(64)

    with strategy.scope():  # variables created here are placed by the strategy
        model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
    history = model.fit(data, epochs=epochs, steps_per_epoch=steps, verbose=2)
    return history.history["loss"][-1]

# %% [markdown] training-function-2
# Reading results back: every replica writes its `report(...)` values into its log,
# and `jobs.results(NAME)` reads them with the job's state. `_ddl_job` names the job
# the last `%%distribute` cell started; `.latest` holds each replica's latest values,
# `.values("loss")` every reported loss in order.

# %%
from jupyter_ddl import default_manager

jobs = default_manager()  # the one API behind %%distribute and %ddl

# %% [markdown] mirrored
# ## 1. MirroredStrategy: one process
#
# One process. With GPUs, MirroredStrategy copies the model onto each of them and sums
# the gradients after every step. A laptop has one device, the CPU, and a
# `MirroredStrategy()` on it has 1 replica in sync. To see the mirroring, this cell
# splits the CPU into two **logical devices** first (before any other TensorFlow op)
# and mirrors over both: 2 replicas in sync, in one process.

# %%
%%distribute --strategy tf-mirrored --wait
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
loss = train(strategy)
report(loss=loss, replicas=strategy.num_replicas_in_sync)

# %%
mirrored = jobs.results(_ddl_job)
mirrored

# %% [markdown] central-storage
# ## 1b. CentralStorageStrategy: one copy of the variables
#
# Also one process, but the variables are **not** mirrored: they live once, on the CPU
# (the "parameter device"), and every GPU computes on them; the gradients are summed
# where the variables live. Useful when a machine's GPUs are many and small, or have
# no fast link between them. Here the two logical CPUs stand for two GPUs again.

# %%
%%distribute --strategy tf-central-storage --wait
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.experimental.CentralStorageStrategy(
    compute_devices=["/cpu:0", "/cpu:1"], parameter_device="/cpu:0")
loss = train(strategy)
report(loss=loss, replicas=strategy.num_replicas_in_sync)

# %%
central = jobs.results(_ddl_job)
central

# %% [markdown] multi-worker
# ## 2. MultiWorkerMirroredStrategy: two workers in lock step
#
# Two processes, each with a full copy of the model. After every step they all-reduce
# their gradients, so both apply the same update and stay identical. Each worker reads
# the whole dataset here; `model.fit` shards it between workers automatically.
#
# Keras note: Keras 3's `model.fit` does not work under this strategy. jupyter-ddl
# sets `TF_USE_LEGACY_KERAS=1` in the replicas when the `tf-keras` package is
# installed, so `tf.keras` is the Keras 2 implementation that does.

# %%
%%distribute --strategy tf-multi-worker-mirrored --workers 2 --wait
loss = train(strategy)
report(loss=loss, replicas=strategy.num_replicas_in_sync)

# %%
multi_worker = jobs.results(_ddl_job)
multi_worker

# %% [markdown] multi-worker-2
# Both workers report the same loss: Keras averages it over the global batch (both
# workers' shares), and their weights are identical after every step.
#
# ## 3. ParameterServerStrategy: chief, workers and parameter servers
#
# Three kinds of process now:
#
# - **PS** (parameter server) replicas hold the variables;
# - **workers** run training steps they are sent, reading and updating variables on the
#   PS, without waiting for each other;
# - the **chief** (the coordinator) runs your cell and dispatches steps to the workers.
#
# Only the chief runs the cell; jupyter-ddl starts a TensorFlow server in the PS and
# worker replicas, which wait for the chief. When the chief finishes, the job is done
# and the servers are stopped.

# %%
%%distribute --strategy tf-parameter-server --chief 1 --workers 1 --ps 1 --wait
loss = train(strategy)
report(loss=loss, replicas=strategy.num_replicas_in_sync)

# %%
parameter_server = jobs.results(_ddl_job)
parameter_server

# %% [markdown] multi-worker-3
# The chief's log has the training; the PS and the worker only said they were serving.
# `%ddl logs` shows any replica's full log (`$name` passes a Python variable to a
# magic):

# %%
ps_job = parameter_server.name
%ddl logs $ps_job --replica ps-0

# %% [markdown] tf-config
# ## Roles and `TF_CONFIG`, seen from inside the replicas
#
# How does each process know who it is? On Kubernetes the TFJob operator sets one
# environment variable, `TF_CONFIG`, in every replica: the whole `cluster` (every
# role and its addresses) and this replica's `task` (its role and index). The local
# backend sets exactly the same variable with `127.0.0.1` addresses.
#
# This job does no training: each replica prints what it was given. There is a
# **chief** (under MultiWorkerMirrored it trains like a worker and also does the
# bookkeeping: checkpoints, summaries), two **workers**, and an **evaluator**, a
# replica that usually reads the checkpoints and computes validation metrics on the
# side. Note that the evaluator appears in the `cluster` map too.

# %%
%%distribute --strategy tf-multi-worker-mirrored --chief 1 --workers 2 --evaluator 1 --wait
import json
import os

config = json.loads(os.environ["TF_CONFIG"])
task = config["task"]
print(f"I am {task['type']} {task['index']}; cluster: {config['cluster']}")
report(role_index=task["index"], roles=len(config["cluster"]))

# %%
tf_config = jobs.results(_ddl_job)
sorted(tf_config.latest)

# %% [markdown] tf-config-2
# On a cluster the addresses are the DNS names of the pods' services instead. This is
# what the operator would give each replica of a ParameterServer job named `mnist` in
# namespace `team-a` (computed here, nothing runs):

# %%
from jupyter_ddl import JobSpec, cluster_endpoints, replica_env, replica_ids

spec = JobSpec(name="mnist", strategy="tf-parameter-server",
               replicas={"Chief": 1, "Worker": 2, "PS": 1})
endpoints = cluster_endpoints(spec, namespace="team-a")
for role, index in replica_ids(spec):
    print(f"{role}-{index}:", replica_env(spec, role, index, endpoints)["TF_CONFIG"])

# %% [markdown] what-we-saw
# ## What we saw
#
# The same `train` function ran under four strategies; only the `%%distribute` line
# (and, for one process, the device list) changed. A summary (the test suite checks
# these values):

# %%
runs = {"mirrored": mirrored, "central-storage": central, "multi-worker": multi_worker,
        "parameter-server": parameter_server}
for name, run in runs.items():
    losses = ", ".join(f"{r}: {v['loss']:.3f}" for r, v in sorted(run.latest.items()))
    print(f"{name:17} {run.state:10} final loss {losses}")

outcome = {
    "states": {name: run.state for name, run in runs.items()},
    "final_loss": {name: max(run.values("loss")) for name, run in runs.items()},
    "workers_agree": len({round(loss, 5) for loss in multi_worker.values("loss")}) == 1,
    "multi_worker_replicas": sorted(multi_worker.latest),
    "tf_config_replicas": sorted(tf_config.latest),
    "in_sync": {name: int(max(run.values("replicas"))) for name, run in runs.items()},
}
outcome["ok"] = (
    all(state == "Succeeded" for state in outcome["states"].values())
    and all(loss < 5.0 for loss in outcome["final_loss"].values())
    and outcome["workers_agree"]
    and outcome["in_sync"]["mirrored"] == 2
    and outcome["in_sync"]["central-storage"] == 2
)
outcome

# %% [markdown] ex-no-chief
# ### Try this
#
# Run the `TF_CONFIG` job without a chief and without an evaluator:
# `--strategy tf-multi-worker-mirrored --workers 3`.
# **Expected:** three replicas, `worker-0` to `worker-2`; the `cluster` map has only
# a `worker` list of three addresses. With no chief, `worker-0` does the chief's
# bookkeeping (checkpoints, summaries).

# %% solution
from jupyter_ddl import JobSpec, cluster_endpoints, replica_env

spec = JobSpec(name="no-chief", strategy="tf-multi-worker-mirrored", replicas={"Worker": 3})
env = replica_env(spec, "Worker", 0, cluster_endpoints(spec, namespace="team-a"))
print(env["TF_CONFIG"])
