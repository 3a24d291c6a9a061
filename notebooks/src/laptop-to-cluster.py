# %% [markdown] title
# # From laptop to cluster
#
# Every job in the earlier notebooks ran as local processes. On a Kubernetes cluster
# with the Kubeflow training operators, the same cells become Kubernetes objects: a
# `TFJob`, a `PyTorchJob`, an `MPIJob` or a Kubeflow Trainer `TrainJob`. This notebook
# shows those objects without needing a cluster (`--dry-run` builds them and starts
# nothing), explains gang scheduling, shows what gets pushed to an image registry,
# gives the three settings that point a notebook at a cluster, and ends on a real
# cluster where one answers: a TFJob and a PyTorchJob submitted, followed, failed and
# cancelled (without a cluster, the same cells are dry runs).

# %%
%load_ext jupyter_ddl

# %% [markdown] objects
# ## 1. One object per job kind
#
# ### TFJob
#
# TensorFlow strategies become a `TFJob` (`kubeflow.org/v1`). Look for
# `tfReplicaSpecs`: one entry per role (`Chief`, `Worker`, `PS`, `Evaluator`), each with
# a replica count and a pod template whose container is named `tensorflow` (the
# operator looks for that name when it injects `TF_CONFIG`).

# %%
%%distribute --strategy tf-multi-worker-mirrored --workers 2 --dry-run
import tensorflow as tf
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])

# %% [markdown] pytorchjob
# ### PyTorchJob
#
# PyTorch strategies become a `PyTorchJob`: a `Master` (rank 0; its address is the
# rendezvous point every other replica dials) and `Worker`s. The operator sets
# `MASTER_ADDR`, `MASTER_PORT`, `RANK` and `WORLD_SIZE` in each pod.

# %%
%%distribute --strategy torch-ddp --replicas 3 --cpu 2 --memory 4Gi --dry-run
import torch
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))

# %% [markdown] mpijob
# ### MPIJob
#
# Horovod becomes an `MPIJob` (`kubeflow.org/v2beta1`, from the mpi-operator): a
# `Launcher` that runs `mpirun` and `Worker`s that host the ranks. `slotsPerWorker`
# goes into the hostfile the operator writes for the launcher.

# %%
%%distribute --strategy horovod --workers 2 --dry-run
import horovod.torch as hvd
hvd.init()

# %% [markdown] trainjob
# ### TrainJob (Kubeflow Trainer v2)
#
# Kubeflow Trainer v2 replaces the per-framework kinds with one `TrainJob` that refers
# to a **runtime** (`torch-distributed` here) prepared by the cluster's
# administrators. The job itself only says which runtime (`runtimeRef`), how many
# nodes (`trainer.numNodes`), what to run and the resources per node; the runtime
# supplies the rest. `--target trainjob` asks for this form.

# %%
%%distribute --strategy torch-ddp --replicas 2 --target trainjob --dry-run
import torch
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))

# %% [markdown] by-hand
# ## 2. The same jobs, written by hand
#
# The generated objects are long because they carry more than the operator needs:
# labels and annotations that let `%ddl list` and the sidebar find the job again,
# the code digest, the runtime's environment variables, the code volume. What the
# **operator** needs is short. A minimal TFJob and PyTorchJob, as you would write them
# for an image that already contains `train.py`:

# %%
import yaml

HAND_TFJOB = """
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: tensorflow          # the operator looks for this name
            image: registry.example.com/team/mnist:1
            command: [python, /app/train.py]
"""

HAND_PYTORCHJOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: mnist-ddp
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch             # the operator looks for this name
            image: registry.example.com/team/mnist-ddp:1
            command: [python, /app/train.py]
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            image: registry.example.com/team/mnist-ddp:1
            command: [python, /app/train.py]
"""
hand = {doc["kind"]: doc for doc in map(yaml.safe_load, (HAND_TFJOB, HAND_PYTORCHJOB))}
print({kind: len(text.strip().splitlines()) for kind, text in
       zip(hand, (HAND_TFJOB, HAND_PYTORCHJOB))}, "lines")

# %% [markdown] operator-view
# `operator_view` strips what is jupyter-ddl's own from a generated object (labels and
# annotations under `jupyter-ddl.io/`, the runtime's `JUPYTER_DDL_*` variables, the
# sidecar annotation) and keeps what the operator and the pods use. Compare the
# generated PyTorchJob for the same shape with the hand-written one:

# %%
from jupyter_ddl import JobSpec, Resources, default_manager

jobs = default_manager()
OURS = "jupyter-ddl.io/"


def operator_view(obj):
    """A copy of a generated object without jupyter-ddl's own labels, annotations and env."""
    if isinstance(obj, list):
        return [operator_view(v) for v in obj if not (isinstance(v, dict) and str(v.get("name", "")).startswith("JUPYTER_DDL_"))]
    if not isinstance(obj, dict):
        return obj
    out = {}
    for key, value in obj.items():
        if key in ("labels", "annotations") and isinstance(value, dict):
            value = {k: v for k, v in value.items()
                     if not k.startswith(OURS) and k != "sidecar.istio.io/inject"}
        value = operator_view(value)
        if value not in ({}, []):
            out[key] = value
    return out


spec = JobSpec(name="mnist-ddp", strategy="torch-ddp", replicas={"Master": 1, "Worker": 2})
generated = [d for d in yaml.safe_load_all(jobs.dry_run(spec)) if d]
torch_job = operator_view(generated[0])
full_lines = len(yaml.safe_dump(generated[0]).splitlines())
view_lines = len(yaml.safe_dump(torch_job).splitlines())
print(f"generated: {full_lines} lines; operator's view: {view_lines} lines\n")
print(yaml.safe_dump(torch_job, sort_keys=False))
same_roles = sorted(torch_job["spec"]["pytorchReplicaSpecs"]) == sorted(hand["PyTorchJob"]["spec"]["pytorchReplicaSpecs"])
print("same roles as the hand-written one:", same_roles)

# %% [markdown] operator-view-reading
# What remains beyond the hand-written job is what makes the generated one run
# anywhere: the code volume (a ConfigMap here, or an image built from your cell),
# `runPolicy` (a backoff limit, `cleanPodPolicy`), and the container port.
#
# ## 3. What `kubectl` shows
#
# There is no cluster here, so this is what the same PyTorchJob looks like from
# `kubectl` on one (names from the example above, in namespace `team-a`). The
# operator names each pod `<job>-<role>-<index>` and labels it, so its pods are one
# selector away:
#
# ```console
# $ kubectl get pytorchjobs -n team-a
# NAME        STATE     AGE
# mnist-ddp   Running   3m
#
# $ kubectl get pods -n team-a -l training.kubeflow.org/job-name=mnist-ddp
# NAME                 READY   STATUS    RESTARTS   AGE
# mnist-ddp-master-0   1/1     Running   0          3m
# mnist-ddp-worker-0   1/1     Running   0          3m
# mnist-ddp-worker-1   1/1     Running   1          3m
#
# $ kubectl describe pytorchjob mnist-ddp -n team-a
# ...
# Status:
#   Conditions:
#     Type:     Created     Status: True   Reason: PyTorchJobCreated
#     Type:     Running     Status: True   Reason: PyTorchJobRunning
#   Replica Statuses:
#     Master:   Active: 1
#     Worker:   Active: 2
# Events:
#   Type    Reason              Message
#   Normal  SuccessfulCreatePod Created pod: mnist-ddp-master-0
#   Normal  SuccessfulCreatePod Created pod: mnist-ddp-worker-0
#   Normal  SuccessfulCreatePod Created pod: mnist-ddp-worker-1
#
# $ kubectl logs mnist-ddp-worker-1 -n team-a --previous   # the run before the restart
# $ kubectl describe pod mnist-ddp-worker-1 -n team-a       # Last State: Terminated, Reason: OOMKilled, Exit Code: 137
# ```
#
# `--previous` shows the log of a container that restarted, and `describe pod` says
# why it ended: this is where an `OOMKilled` shows up. `%ddl status`, `%ddl logs` and the
# sidebar read the same objects through the Kubernetes API.

# %% [markdown] gang
# ## 4. Gang scheduling: all pods or none
#
# A synchronous job (DDP, MultiWorkerMirrored, Horovod) cannot take a single step
# until *every* replica is up: the first all-reduce waits for all of them. The default
# Kubernetes scheduler places pods one at a time and knows nothing of that. When two
# such jobs arrive together on a busy cluster, it can give each job half of what it
# needs: both jobs hold GPUs, neither can start, and neither will ever release them.
#
# This small simulation places pods on a cluster with 4 free GPUs, where two jobs ask
# for 4 one-GPU pods each, and the pods of the two jobs arrive interleaved:

# %%
def schedule(jobs, free_gpus, gang):
    """Place one-GPU pods in arrival order (the jobs' pods interleaved).

    Without gang scheduling each pod is placed if a GPU is free. With it, a job's
    pods are placed only all together. Returns the pods placed per job."""
    placed = {name: 0 for name, _ in jobs}
    if gang:
        for name, pods in jobs:
            if pods <= free_gpus:
                placed[name], free_gpus = pods, free_gpus - pods
        return placed
    arrivals = [name for i in range(max(p for _, p in jobs)) for name, p in jobs if i < p]
    for name in arrivals:
        if free_gpus:
            placed[name], free_gpus = placed[name] + 1, free_gpus - 1
    return placed


arriving = [("job-a", 4), ("job-b", 4)]
startable = {}
for gang in (False, True):
    placed = schedule(arriving, free_gpus=4, gang=gang)
    startable[gang] = [name for name, pods in arriving if placed[name] == pods]
    print(f"gang={gang}: pods placed {placed}; jobs that can start: {startable[gang] or 'none (deadlock)'}")
deadlock_without_gang = not startable[False]
deadlock_with_gang = not startable[True]

# %% [markdown] gang-2
# Without gang scheduling, each job holds two GPUs and waits forever for two more.
# With it, `job-b` places nothing and waits in the queue; when `job-a` ends and frees
# its GPUs, `job-b` starts. Both finish.
#
# Gang (or co-) scheduling works like that: the scheduler treats a **PodGroup** as one unit
# and binds its pods only when `minMember` of them fit at once. The idea came from
# kube-batch, which grew into **Volcano**; the scheduler-plugins project offers the
# same as a plugin of the default scheduler. Volcano adds **queues** (a share of the
# cluster per team) and respects **priority classes**.
#
# `--gang` turns it on. Look for `runPolicy.schedulingPolicy` (queue, priority,
# `minAvailable`), `schedulerName: volcano` in the pod templates, and a `PodGroup`
# after the job whose `minMember: 4` means all four pods or none:

# %%
%%distribute --strategy torch-ddp --replicas 4 --gpus 1 --gang --queue research --priority high --dry-run
import torch

# %% [markdown] image
# ## 5. What the image builder pushes
#
# A cluster cannot read your notebook, so the code has to travel. With a registry
# configured, jupyter-ddl builds one small **layer** holding the cell's code bundle,
# appends it to the framework's base image (for example the official PyTorch image)
# and pushes the result. The base image's layers are never downloaded: the registry
# is asked to mount them, or they are copied registry to registry. No Docker daemon is
# involved.
#
# The bundle is five files: the captured code (`cell.py`: the cell and the
# definitions it uses), the runtime (`ddl_runtime.py` and its torch part
# `ddl_runtime_torch.py`, which set up the strategy in every replica, and
# `ddl_spawn.py`, for processes the cell starts itself) and the entry point
# (`main.py`). This is the "append" builder of Kubeflow Fairing (see
# `coming-from-tensorflow.ipynb`), done without its SDK. The layer is built deterministically
# (fixed times, owners and order), so the same code gives the same digest, the same
# image tag, and nothing to upload the second time:

# %%
import tarfile, io
from jupyter_ddl import build_bundle, build_layer

bundle = build_bundle("print('hello from', rank)\n")
layer = build_layer(bundle)
with tarfile.open(fileobj=io.BytesIO(layer.data)) as tar:
    for member in tar.getmembers():
        print(f"{member.mode:o} {member.size:>6} {member.name}")
print("layer digest:", layer.digest, f"({layer.size} bytes compressed)")
same_digest_twice = build_layer(build_bundle("print('hello from', rank)\n")).digest == layer.digest
print("same code, same digest:", same_digest_twice)

# %% [markdown] image-2
# Besides the layer, only the image's configuration changes: the command runs the
# entry point, the working directory is the code folder, and a few labels record the
# code digest and the base image. None of the notebook's environment variables go
# in; values a job needs at run time (tokens, passwords) travel as Kubernetes Secrets
# (`--secret-env NAME`), never in the image.

# %%
from jupyter_ddl import code_changes

changes = code_changes(bundle, base="docker.io/pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime")
print("command:    ", changes.cmd)
print("working dir:", changes.working_dir)
print("env added:  ", changes.env)
print("labels:     ", changes.labels)

# %% [markdown] image-3
# Without a registry, the bundle goes into a **ConfigMap** mounted into every pod of
# the job instead: no push, but limited to about 1 MB of code.
#
# ## 6. Pointing this notebook at a cluster
#
# Three settings, saved for every notebook of this user (`%ddl config` shows them):
#
# ```python
# %ddl config backend=kubernetes
# %ddl config namespace=my-team
# %ddl config registry=registry.example.com/my-team   # optional: without it, ConfigMaps
# ```
#
# The cluster comes from your kubeconfig (inside a Kubeflow notebook server, from the
# pod's service account). Then every `%%distribute` cell of the workshop runs
# unchanged as a Kubernetes job, and `%ddl list`, `%ddl logs` and the JupyterLab
# sidebar show it the same way. A single cell can also pick a backend with
# `--backend kubernetes`.

# %%
%ddl config

# %% [markdown] ex-gpus
# ### Try this
#
# Add `--gpus 1` to the PyTorchJob dry run of section 1.
# **Expected:** every pod template's container gets `nvidia.com/gpu: 1` under both
# `resources.requests` and `resources.limits`, and the runtime will choose NCCL.

# %% solution
import yaml

from jupyter_ddl import JobSpec, Resources, default_manager

jobs = default_manager()
spec = JobSpec(name="gpu-demo", strategy="torch-ddp", replicas={"Master": 1, "Worker": 2},
               default_resources=Resources(gpu=1))
job = [d for d in yaml.safe_load_all(jobs.dry_run(spec)) if d][0]
for role, replica in job["spec"]["pytorchReplicaSpecs"].items():
    print(role, replica["template"]["spec"]["containers"][0]["resources"])

# %% [markdown] cluster-lab
# ## 7. On a real cluster: submit, follow, fail, cancel
#
# So far every Kubernetes object was a dry run. This section sends four small jobs to
# the cluster your kubeconfig names, in its namespace: a TFJob and a PyTorchJob that
# run to `Succeeded`, one that fails, and one that you cancel. In a workshop, the
# teacher starts a small cluster with the Kubeflow training operator on a Linux
# server and gives you one line to run before you start Jupyter:
# `export KUBECONFIG=...`.
#
# **No cluster?** The next cell asks the cluster whether it answers. If none does,
# the cell says why, `dry_run` holds `--dry-run`, and every job cell of this section
# becomes a dry run: you see the objects it would submit, and the cells that read a
# job skip it. The notebook runs to the end either way.

# %%
from jupyter_ddl import DDLError, default_manager

jobs = default_manager()
try:
    jobs.list(backend="kubernetes")  # one round trip to the cluster of your kubeconfig
    dry_run = ""
    print("a cluster answers: the job cells below submit real jobs")
except DDLError as e:
    dry_run = "--dry-run"
    print("no cluster answers, so the job cells below are dry runs:", str(e).splitlines()[0])
_ddl_job = None  # each %%distribute that submits a job puts its name here

# %% [markdown] cluster-lab-tf
# ### A TFJob, followed to the end
#
# `--backend kubernetes` sends this one cell to the cluster; the notebook's own
# backend stays as it is. `--wait` follows the job until it ends. IPython replaces
# `$dry_run` with the variable's value before the magic reads the line. Each of the
# two workers adds its 1 into one sum across the workers (an all-reduce).
#
# **What you should see:** each worker's line, `worker 0 of 2: sum 2.0` and
# `worker 1 of 2: sum 2.0`, then `Succeeded`.

# %%
%%distribute --strategy tf-multi-worker-mirrored --workers 2 --backend kubernetes --wait $dry_run
import tensorflow as tf

ones = strategy.run(lambda: tf.constant(1.0))
total = strategy.reduce(tf.distribute.ReduceOp.SUM, ones, axis=None)
print(f"worker {rank} of {world_size}: sum {float(total)}", flush=True)

# %%
tf_job = _ddl_job

# %% [markdown] cluster-lab-torch
# ### A PyTorchJob
#
# The same with PyTorch: a `Master` (rank 0) and a `Worker` (rank 1), which find
# each other through the address the operator gives the Master.
#
# **What you should see:** `rank 0 of 2: sum 3.0` and `rank 1 of 2: sum 3.0`, then
# `Succeeded`.

# %%
%%distribute --strategy torch-ddp --replicas 2 --backend kubernetes --wait $dry_run
import torch
import torch.distributed as dist

total = torch.ones(1) * (rank + 1)
dist.all_reduce(total)
print(f"rank {rank} of {world_size}: sum {total.item()}", flush=True)

# %%
torch_job = _ddl_job

# %% [markdown] cluster-lab-fail
# ### A job that fails
#
# Rank 1 cannot find its data and raises. `--restart-policy Never` keeps its pod from
# being started again, so the operator fails the job at the first failed replica and
# the failure shows at once instead of after several restarts. (`--backoff-limit 0`
# would end it as fast, but a job past its backoff limit has every pod deleted at once,
# and with them the exit codes that tell which replica failed first.)
#
# **What you should see:** the cell fails with one line that names the replica that
# failed first and its error, `worker-0 · rank 1 failed first: FileNotFoundError: ...`;
# rank 0, which lost its peer in the barrier, follows after "then".

# %% raises
%%distribute --strategy torch-ddp --replicas 2 --backend kubernetes --restart-policy Never --wait $dry_run
import torch.distributed as dist

print(f"rank {rank}: reading my data shard", flush=True)
if rank == 1:
    raise FileNotFoundError("data/shard-1.pt is missing")
dist.barrier()

# %%
failed_job = _ddl_job

# %% [markdown] cluster-lab-cancel
# ### A job that you cancel
#
# Without `--wait` the cell returns at once and the job goes on in the background.
# This one would train for ten minutes; the cell after it waits until it runs, then
# cancels it through the job API (`%ddl cancel NAME` does the same). Cancelling
# suspends the job: the operator deletes its pods and the job object stays, so you can
# still read its record.
#
# **What you should see:** `Running`, then `Cancelled`.

# %%
%%distribute --strategy torch-ddp --replicas 2 --backend kubernetes $dry_run
import time

print(f"rank {rank}: training for ten minutes", flush=True)
time.sleep(600)

# %%
import time

slow_job = _ddl_job
if slow_job:
    deadline = time.monotonic() + 120
    while jobs.get(slow_job).state.value != "Running" and time.monotonic() < deadline:
        time.sleep(1)
    print(slow_job, jobs.get(slow_job).state.value)
    print(slow_job, jobs.cancel(slow_job).state.value)

# %% [markdown] cluster-lab-clean
# Each job keeps its object on the cluster until someone deletes it, so `%ddl list`
# and the sidebar still show them. This cell reads the four jobs' states, then
# deletes them (`%ddl delete NAME` does the same for one job).

# %%
lab_jobs = {"tfjob": tf_job, "pytorchjob": torch_job, "failing": failed_job, "cancelled": slow_job}
cluster_lab = {"ran": bool(tf_job), "states": {}}
for what, name in lab_jobs.items():
    if name:
        state = jobs.get(name).state.value
        cluster_lab["states"][what] = state
        jobs.delete(name)
        print(f"{what:10} {name}: {state}; deleted")
if not cluster_lab["ran"]:
    print("dry runs only: no job was submitted, nothing to delete")

# %% [markdown] python-api
# ## The same from Python
#
# The magics are a thin layer over one Python API, `JobManager`; scripts and tests can
# use it directly. Here it renders the four kinds again and checks what came out:

# %%
from jupyter_ddl import GangScheduling

specs = {
    "TFJob": JobSpec(name="demo-tf", strategy="tf-multi-worker-mirrored", replicas={"Worker": 2}),
    "PyTorchJob": JobSpec(name="demo-torch", strategy="torch-ddp", replicas={"Master": 1, "Worker": 2}),
    "MPIJob": JobSpec(name="demo-mpi", strategy="horovod", replicas={"Launcher": 1, "Worker": 2}),
    "TrainJob": JobSpec(name="demo-train", strategy="torch-ddp", replicas={"Master": 1, "Worker": 1},
                        target="TrainJob"),
    "gang": JobSpec(name="demo-gang", strategy="torch-ddp", replicas={"Master": 1, "Worker": 3},
                    gang=GangScheduling(queue="research")),
}
kinds = {}
for label, spec in specs.items():
    documents = [d for d in yaml.safe_load_all(jobs.dry_run(spec)) if d]
    kinds[label] = [d["kind"] for d in documents]
    print(f"{label:10} -> {', '.join(kinds[label])}")

outcome = {
    "kinds": kinds,
    "deadlock_without_gang": deadlock_without_gang,
    "deadlock_with_gang": deadlock_with_gang,
    "same_digest_twice": same_digest_twice,
    "operator_view_lines": [view_lines, full_lines],
    "hand_written_kinds": sorted(hand),
    "cluster_lab": cluster_lab,
}
outcome["ok"] = (
    all(kinds[k][0] == k for k in ("TFJob", "PyTorchJob", "MPIJob", "TrainJob"))
    and "PodGroup" in kinds["gang"]
    and deadlock_without_gang
    and not deadlock_with_gang
    and same_digest_twice
    and same_roles
    and view_lines < full_lines
)
outcome
