# %% [markdown] title
# # Beyond data parallelism: ring-allreduce, pipelines, elastic jobs, TPUs and ZeRO
#
# Every job so far was **data parallel**: each process holds the whole model and
# trains on its own share of the data. This notebook opens the box and looks around:
#
# 1. the **ring-allreduce** that moves the gradients, written by hand with MPI and
#    timed against MPI's own `Allreduce`; parameter servers vs all-reduce;
# 2. **model and pipeline parallelism**, for models that do not fit one device: a
#    two-process pipeline on CPU;
# 3. **elastic** training, which survives processes coming and going;
# 4. **TPUs** and **DeepSpeed / ZeRO**, which need hardware this laptop lacks: what the
#    job would look like, and the memory arithmetic behind ZeRO.

# %%
%load_ext jupyter_ddl

# %%
import os

from jupyter_ddl import default_manager

jobs = default_manager()  # jobs.results(NAME): a job's state and its report(...) values
QUICK = os.environ.get("DDL_WORKSHOP_QUICK", "0")  # "1": fewer repeats, the same checks

# %% [markdown] ring
# ## 1. Ring-allreduce by hand
#
# `N` processes sit in a ring; each splits its array into `N` chunks. Two phases of
# `N - 1` steps each, where every process sends one chunk to its right neighbour and
# receives one from its left neighbour at the same time:
#
# - **reduce-scatter**: each received chunk is added to the local one; after `N - 1`
#   steps, process `r` holds the complete sum of chunk `(r + 1) mod N`;
# - **all-gather**: the complete chunks travel once more around the ring, overwriting,
#   until every process has every summed chunk.
#
# Each process sends `2 (N - 1)` chunks of `size / N`: about twice the array, whatever
# `N` is. No process is a bottleneck, which is why Horovod (named after a circle dance)
# and NCCL use it. Four ranks here; the result must equal MPI's `Allreduce`.

# %%
%%distribute --strategy horovod --workers 4 --env DDL_WORKSHOP_QUICK=$QUICK --wait
# A replica sees only the variables it is given (--env above), as a pod would.
import os
import time

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
r, n = comm.Get_rank(), comm.Get_size()
left, right = (r - 1) % n, (r + 1) % n


def ring_allreduce(data):
    chunks = np.array_split(data.copy(), n)
    sent = 0
    for step in range(n - 1):  # reduce-scatter
        out, into = (r - step) % n, (r - step - 1) % n
        incoming = np.empty_like(chunks[into])
        comm.Sendrecv(chunks[out], dest=right, recvbuf=incoming, source=left)
        chunks[into] += incoming
        sent += chunks[out].nbytes
    for step in range(n - 1):  # all-gather
        out, into = (r + 1 - step) % n, (r - step) % n
        incoming = np.empty_like(chunks[into])
        comm.Sendrecv(chunks[out], dest=right, recvbuf=incoming, source=left)
        chunks[into] = incoming
        sent += chunks[out].nbytes
    return np.concatenate(chunks), sent


data = np.random.default_rng(r).random(1_000_000, dtype=np.float32)  # 4 MB per rank
mine, sent = ring_allreduce(data)
theirs = np.empty_like(data)
comm.Allreduce(data, theirs, op=MPI.SUM)
same = bool(np.allclose(mine, theirs, rtol=1e-5))

timings = {"ring": [], "mpi": []}
for _ in range(3 if os.environ.get("DDL_WORKSHOP_QUICK") == "1" else 10):
    for name, fn in (("ring", lambda: ring_allreduce(data)),
                     ("mpi", lambda: comm.Allreduce(data, theirs, op=MPI.SUM))):
        comm.Barrier()
        start = time.perf_counter()
        fn()
        timings[name].append(time.perf_counter() - start)
print(f"rank {r}: same as Allreduce: {same}; sent {sent / data.nbytes:.2f}x the array; "
      f"ring {min(timings['ring']) * 1e3:.1f} ms, MPI {min(timings['mpi']) * 1e3:.1f} ms (best of {len(timings['mpi'])})")
report(same=int(same), sent_ratio=sent / data.nbytes, ring_ms=min(timings["ring"]) * 1e3,
       mpi_ms=min(timings["mpi"]) * 1e3)

# %%
ring = jobs.results(_ddl_job)
ring

# %% [markdown] ring-reading
# Every rank got MPI's answer and sent 1.5 times its array (`2 × 3 / 4`). MPI's own
# `Allreduce` is usually faster: it picks an algorithm by message size and process
# count, and on one machine it can use shared memory instead of messages.
#
# **Parameter server or all-reduce?** With a parameter server, every worker sends its
# whole gradient to the server and receives the whole model back each step: the
# server's link carries `N` times the model each way, and grows with every worker
# (sharding the variables over several PS spreads that load). In the ring each link
# carries about twice the model, for any `N`. The PS design wins where workers should
# not wait for each other (asynchronous training, very large sparse embeddings);
# synchronous all-reduce wins for dense models on fast links.

# %%
def traffic_per_step(model_mib, workers):
    """MiB through the busiest link per step: one parameter server vs a ring."""
    return {"parameter server": 2 * workers * model_mib, "ring all-reduce": 2 * (workers - 1) / workers * model_mib}


for workers in (2, 4, 8, 16):
    t = traffic_per_step(100, workers)
    print(f"{workers:2} workers, 100 MiB model: busiest link carries {t['parameter server']:6.0f} MiB "
          f"with one PS, {t['ring all-reduce']:5.0f} MiB in a ring")

# %% [markdown] pipeline
# ## 2. Model and pipeline parallelism
#
# When the model does not fit one device, split **the model** instead of the data:
#
# - **model (tensor) parallelism** splits each layer's weights over devices: every
#   device computes part of every layer, and they exchange partial results inside
#   each layer. It needs very fast links (it is used inside one NVLink machine);
# - **pipeline parallelism** puts consecutive layers on different devices (stages).
#   A batch is cut into **micro-batches** that flow through the stages like an assembly
#   line, so stage 1 works on micro-batch 1 while stage 0 already computes
#   micro-batch 2. At the start and the end of each batch some stages idle: the
#   "bubble", smaller with more micro-batches.
#
# Two processes, two stages: rank 0 holds the first layer, rank 1 the second and the
# loss. Forward, rank 0 sends its activations with `dist.send` and rank 1 receives
# them with `dist.recv`. Backward, the other way round: rank 1 sends the gradient of
# the loss with respect to those activations, and rank 0 receives it and carries the
# backward pass through its own layer. Rank 1 also trains the same model in one piece,
# from the same start, on the same data: the two must end with the same loss.

# %%
%%distribute --strategy torch-ddp --replicas 2 --wait
import torch
import torch.distributed as dist

torch.manual_seed(0)
first = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU())  # stage 0
second = torch.nn.Linear(64, 1)                                        # stage 1
whole = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
whole.load_state_dict({**{f"0.{k}": v for k, v in first[0].state_dict().items()},
                       **{f"2.{k}": v for k, v in second.state_dict().items()}})
stage = first if rank == 0 else second
opt = torch.optim.SGD(stage.parameters(), lr=0.05)
opt_whole = torch.optim.SGD(whole.parameters(), lr=0.05)

g = torch.Generator().manual_seed(1)
x = torch.randn(64, 16, generator=g)
y = x[:, :4].sum(1, keepdim=True)
micro = 4  # micro-batches per batch
for step in range(30):
    opt.zero_grad()
    losses = []
    for xs, ys in zip(x.chunk(micro), y.chunk(micro)):
        if rank == 0:
            act = stage(xs)
            dist.send(act.detach(), dst=1)       # forward: activations to stage 1
            grad = torch.empty_like(act)
            dist.recv(grad, src=1)               # backward: their gradient comes back
            act.backward(grad)
        else:
            act = torch.empty(len(xs), 64)
            dist.recv(act, src=0)
            act.requires_grad_()
            loss = torch.nn.functional.mse_loss(stage(act), ys) / micro
            loss.backward()
            dist.send(act.grad, dst=0)
            losses.append(loss.item())
    opt.step()
    if rank == 1:  # the reference: the whole model in one process
        opt_whole.zero_grad()
        reference = torch.nn.functional.mse_loss(whole(x), y)
        reference.backward()
        opt_whole.step()

if rank == 1:
    print(f"pipeline loss {sum(losses):.6f}, one-process loss {reference.item():.6f}")
    report(pipeline_loss=sum(losses), reference_loss=reference.item())

# %%
pipeline = jobs.results(_ddl_job).latest["worker-0"]
pipeline

# %% [markdown] pipeline-reading
# Same numbers: splitting the model changed where it runs, not what it computes. This
# small version runs the micro-batches one after the other, so the two stages never
# work at the same time; real pipelines (GPipe, PipeDream, `torch.distributed.pipelining`,
# DeepSpeed's pipeline engine) overlap them and combine pipelines with data parallelism.
#
# ## 3. Elastic training
#
# An **elastic** job keeps training when processes come and go: a node is preempted,
# or more GPUs free up. Every process runs under `torchrun`, whose agents meet at a
# **rendezvous**; when membership changes, the agents stop the workers, meet again
# with the new set, and restart them, which resume from their last checkpoint. On a
# cluster the PyTorchJob's `elasticPolicy` gives the bounds (`minReplicas`,
# `maxReplicas`) and the rendezvous backend.
#
# `--strategy torch-elastic` runs that here: two workers, each under a torchrun
# agent. Each prints what the agent gave it.

# %%
%%distribute --strategy torch-elastic --replicas 2 --wait
import os

import torch
import torch.distributed as dist

t = torch.ones(1)
dist.all_reduce(t)
print(f"RANK={os.environ['RANK']} WORLD_SIZE={os.environ['WORLD_SIZE']} "
      f"GROUP_RANK={os.environ['GROUP_RANK']} restarts={os.environ.get('TORCHELASTIC_RESTART_COUNT')} "
      f"rendezvous={os.environ.get('PET_RDZV_BACKEND')} nnodes={os.environ.get('PET_NNODES')}")
report(elastic_rank=dist.get_rank(), world=dist.get_world_size(), total=t.item())

# %%
elastic = jobs.results(_ddl_job)
elastic

# %% [markdown] elastic-yaml
# On a cluster the same job is a PyTorchJob with an `elasticPolicy`:

# %%
%%distribute --strategy torch-elastic --replicas 2 --dry-run
import torch.distributed as dist

# %% [markdown] elastic-change
# ### 3b. A worker leaves, the job goes on, the worker comes back
#
# Above, the bounds were two and two: the job runs with both workers or not at all.
# Now three workers with `minReplicas` 2 and `maxReplicas` 3 (`PET_NNODES=2:3` for
# torchrun). `%%distribute` has no flag for the bounds, so the next cell submits the
# job through the job API every surface uses: a `JobSpec` with two `backend_options`.
#
# The training loop **checkpoints**: after every step rank 0 writes the model, the
# optimizer and the step to a folder every replica reads (on a cluster: a volume all
# pods mount), writing a new file and renaming it, so a crash never leaves half a
# checkpoint. Every worker that starts loads it and carries on from the next step, on
# its share of the data for the world it now has. It stops after step 24 (60 without
# quick mode), and its last five steps wait for all three workers: this run always
# ends with the whole world. Three settings go with it:
#
# - `PET_MAX_RESTARTS=3`: torchrun may restart its workers after a failure (the
#   default, 0, ends the job at the first);
# - `PET_RDZV_CONF=last_call_timeout=1`: once the minimum is there, wait 1 s for more
#   workers, not 30;
# - `TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1`: with torch's shared store a worker that
#   joins a later round waits for an address nobody writes again, then fails; this
#   turns the sharing off.
#
# Each replica's command first waits while a file `away-<replica>` exists, then runs
# torchrun on the job's entry point (in the job's folder, `$JUPYTER_DDL_JOB_DIR`): that
# is how this notebook plays a node that is taken away and later given back.

# %%
import shutil
import sys
import tempfile
import time
from pathlib import Path

import psutil

from jupyter_ddl import JobSpec, build_bundle

ELASTIC_STEPS = 24 if QUICK == "1" else 60
shared = Path(tempfile.mkdtemp(prefix="ddl-elastic-"))  # the "volume" every replica reads
TRAIN = f'''
import os
import time

import torch
import torch.distributed as dist

path = os.path.join(os.environ["CKPT_DIR"], "checkpoint.pt")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
start = 0
if os.path.exists(path):  # resume: the weights, the optimizer and the next step
    state = torch.load(path)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    start = state["step"] + 1
x = torch.randn(240, 8, generator=torch.Generator().manual_seed(1))
y = x @ torch.arange(8.0).unsqueeze(1) / 8
restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
print(f"rank {{rank}} of {{world}}, restart {{restart}}, from step {{start}}")
step = start
while step < {ELASTIC_STEPS}:
    if world < 3 and step >= {ELASTIC_STEPS} - 5:  # the last five wait for the whole world
        time.sleep(0.25)
        continue
    xs, ys = x[rank::world], y[rank::world]  # this world's share of the data
    loss = torch.nn.functional.mse_loss(model(xs), ys)
    opt.zero_grad()
    loss.backward()
    for p in model.parameters():  # what DDP does for us, by hand
        dist.all_reduce(p.grad)
        p.grad /= world
    opt.step()
    if rank == 0:
        torch.save({{"model": model.state_dict(), "opt": opt.state_dict(), "step": step}},
                   path + ".new")
        os.replace(path + ".new", path)  # a whole checkpoint or the last one, never half
        report(at=step, world=world, restart=restart, loss=loss.item())
    step += 1
    time.sleep(0.25)
'''
gate = 'while [ -e "$CKPT_DIR/away-$JUPYTER_DDL_REPLICA" ]; do sleep 0.2; done; exec "$0" "$@" "$JUPYTER_DDL_JOB_DIR/bundle/main.py"'
elastic_spec = JobSpec(
    name=f"elastic-{int(time.time())}",
    strategy="torch-elastic",
    replicas={"Worker": 3},
    backend_options={"elastic_min_replicas": 2, "elastic_max_replicas": 3},
    env={
        "CKPT_DIR": str(shared),
        "PET_MAX_RESTARTS": "3",
        "PET_RDZV_CONF": "last_call_timeout=1",
        "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1",
    },
    command=["sh", "-c", gate, sys.executable, "-m", "torch.distributed.run"],
)
jobs.submit(elastic_spec, build_bundle(TRAIN))
print("submitted", elastic_spec.name)

# %% [markdown] elastic-away
# Wait for a few steps with three workers, then take `worker-2` away: first its file
# is created, so that the replica waits when the job restarts it (restart policy
# `OnFailure`, a PyTorchJob's default); then every process of the replica is killed, as a
# node that disappears takes its pod with it. The other two lose their peer in the
# middle of an all-reduce, their agents meet again without it, and training goes on
# with two. After a few steps with two, the file goes away: `worker-2` starts, its
# agent asks to join, the other agents stop their workers, and all three meet again.


# %%
def elastic_steps(world=None):
    """Steps rank 0 reported so far (only those run with ``world`` workers, if given)."""
    reports = jobs.results(elastic_spec.name).reports
    return [int(v["at"]) for _, v in reports if world is None or v["world"] == world]


def wait_until(what, done, limit=240):
    deadline = time.monotonic() + limit
    while not done():
        if jobs.get(elastic_spec.name).state.finished or time.monotonic() > deadline:
            raise RuntimeError(f"gave up waiting for {what}: %ddl status {elastic_spec.name}")
        time.sleep(0.5)


wait_until("3 steps with 3 workers", lambda: len(elastic_steps(3)) >= 3)
away = shared / "away-worker-2"
away.touch()
pid = {r.id: r.pid for r in jobs.get(elastic_spec.name).replicas}["worker-2"]
node = psutil.Process(pid)
for proc in [node, *node.children(recursive=True)]:
    proc.kill()
print(f"worker-2 taken away after step {max(elastic_steps())}")
wait_until("3 steps with 2 workers", lambda: len(elastic_steps(2)) >= 3)
away.unlink()
print(f"worker-2 given back after step {max(elastic_steps())}")
if not jobs.wait(elastic_spec.name, timeout=240).state.finished:
    jobs.cancel(elastic_spec.name)
    raise RuntimeError(f"{elastic_spec.name} did not finish in 240 s: %ddl logs {elastic_spec.name}")
elastic_change = jobs.results(elastic_spec.name)
print(elastic_change.state)

# %% [markdown] elastic-reading
# Each run of the workers, with its world size and the steps it trained: each run
# starts from the step after the last checkpoint, never from scratch, the
# world goes from 3 to 2 and back to 3, and the loss keeps falling across both
# changes. `%ddl status` shows `worker-2` restarted once; the other two never were:
# their agents restarted only the processes inside them.

# %%
segments = []  # (world, torchrun's restart count, first step, last step)
for _, v in elastic_change.reports:
    key = (int(v["world"]), int(v["restart"]))
    if not segments or tuple(segments[-1][:2]) != key:
        segments.append([*key, int(v["at"]), int(v["at"])])
    segments[-1][3] = int(v["at"])
for world, restart, first, last in segments:
    print(f"world {world}  (restart {restart})  steps {first:>2} to {last:>2}")
losses = elastic_change.values("loss")
print(f"loss {losses[0]:.4f} at the start, {losses[-1]:.5f} at the end")
shutil.rmtree(shared, ignore_errors=True)

# %% [markdown] ex-checkpoint
# ### Try this
#
# Why a new file and a rename? Save a checkpoint of step 1, then play a crash halfway
# through saving step 2: write only the first half of its bytes, once straight into
# `checkpoint.pt`, once into `checkpoint.pt.new` as the loop above does (the crash
# comes before the rename). Load `checkpoint.pt` after each.
# **Expected:** written straight, the file is half a checkpoint and `torch.load`
# fails; written beside it, `checkpoint.pt` still loads, at step 1, and the restarted
# workers lose one step, not the run.

# %% solution
import io

import torch

folder = Path(tempfile.mkdtemp(prefix="ddl-ckpt-"))
path = folder / "checkpoint.pt"
torch.save({"step": 1, "w": torch.zeros(1000)}, path)
buffer = io.BytesIO()
torch.save({"step": 2, "w": torch.ones(1000)}, buffer)
half = buffer.getvalue()[: len(buffer.getvalue()) // 2]  # what a crash mid-write leaves
loads = {}
for target in (path.with_name("checkpoint.pt.new"), path):  # beside it, then straight
    target.write_bytes(half)
    try:
        loads[target.name] = f"loads, step {torch.load(path)['step']}"
    except Exception as e:  # torch has its own errors for a torn file
        loads[target.name] = f"is torn ({type(e).__name__})"
    print(f"crash while writing {target.name}: checkpoint.pt {loads[target.name]}")
assert loads["checkpoint.pt.new"] == "loads, step 1", loads
assert loads["checkpoint.pt"].startswith("is torn"), loads
shutil.rmtree(folder)

# %% [markdown] tpu
# ## 4. TPUs
#
# `TPUStrategy` is the `MirroredStrategy` of Google's TPUs: one program drives the
# chips of a TPU host, and the strategy replicates the model over them. A TPU job
# needs a cluster with TPU nodes (Google Kubernetes Engine), so here it is a dry run:
# one TFJob worker asking for 8 `google.com/tpu`; the runtime connects to the TPU with
# `TPUClusterResolver` before the cell runs.

# %%
%%distribute --strategy tf-tpu --tpus 8 --dry-run
import tensorflow as tf

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])

# %% [markdown] zero
# ## 5. DeepSpeed and ZeRO
#
# Data parallelism copies everything to every GPU: the weights, the gradients and the
# optimizer's state (Adam keeps two values per weight, in fp32). For a model of `P`
# weights trained in mixed precision with Adam that is about `16 P` bytes per GPU:
# 2 (fp16 weights) + 2 (fp16 gradients) + 12 (fp32 master weights and Adam's two
# moments). DeepSpeed's **ZeRO** removes the copies by splitting them over the `N`
# data-parallel processes:
#
# - stage 1 splits the optimizer state: `4 P + 12 P / N`;
# - stage 2 also the gradients: `2 P + 14 P / N`;
# - stage 3 also the weights: `16 P / N`, gathered layer by layer when needed.
#
# The price is more communication (stage 3 gathers the weights in every forward and
# backward pass). This cell does the arithmetic for a 7.5-billion-weight model:

# %%
def zero_memory_gib(weights, gpus):
    """Per-GPU GiB for model states (mixed precision + Adam) under each ZeRO stage."""
    gib = 2**30
    return {
        "plain data parallel": 16 * weights / gib,
        "ZeRO stage 1": (4 * weights + 12 * weights / gpus) / gib,
        "ZeRO stage 2": (2 * weights + 14 * weights / gpus) / gib,
        "ZeRO stage 3": 16 * weights / gpus / gib,
    }


zero = zero_memory_gib(7.5e9, 64)
for stage_name, gib in zero.items():
    print(f"{stage_name:20} {gib:7.1f} GiB per GPU (64 GPUs)")

# %% [markdown] deepspeed-yaml
# A DeepSpeed job is a PyTorchJob like DDP (DeepSpeed reads the same `MASTER_ADDR`,
# `RANK`, `WORLD_SIZE`); the ZeRO stage lives in the DeepSpeed config the cell passes
# to `deepspeed.initialize`. Without GPUs (and without DeepSpeed installed here) this
# is a dry run:

# %%
%%distribute --strategy deepspeed --replicas 2 --gpus 1 --dry-run
import deepspeed
import torch

model = torch.nn.Linear(8, 1)
config = {"train_batch_size": 64, "zero_optimization": {"stage": 2}, "fp16": {"enabled": True},
          "optimizer": {"type": "Adam", "params": {"lr": 1e-3}}}
engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                               config=config)

# %% [markdown] fsdp
# **PyTorch's own sharding: FSDP.** `torch.distributed.fsdp` (FullyShardedDataParallel;
# `fully_shard` in recent releases) does what ZeRO stage 3 does, without DeepSpeed:
# each rank keeps a shard of the weights, gradients and optimizer state, gathers a
# layer's full weights just before the layer runs, and reduce-scatters its gradients
# after (a mode that shards only gradients and optimizer state matches stage 2; hybrid
# sharding shards within a node and replicates across nodes). It beats DDP when the
# model's states do not fit one GPU, or leave too little memory for a useful batch.
# When the model fits comfortably, DDP is faster and simpler: one all-reduce per step,
# instead of all-gathers in both passes plus a reduce-scatter. An FSDP job starts
# exactly like DDP: `--strategy torch-ddp`, a PyTorchJob, the same `MASTER_ADDR`,
# `RANK` and `WORLD_SIZE`.

# %% [markdown] ex-ring
# ### Try this
#
# Predict how many times its array each rank sends in the ring-allreduce with
# `--workers 8`, then with `--workers 2`.
# **Expected:** `2 × 7 / 8 = 1.75` and `2 × 1 / 2 = 1.0`: it approaches 2 as the
# ring grows, and never more.

# %% solution
for workers in (2, 4, 8):
    print(f"{workers} ranks: each sends {2 * (workers - 1) / workers:.2f}x its array")

# %% [markdown] summary
# ## What we saw
#
# (The test suite checks these values.)

# %%
outcome = {
    "ring_same": sorted({bool(same) for same in ring.values("same")}),
    "ring_ranks": len(ring.reports),
    "ring_sent_ratio": sorted({round(ratio, 3) for ratio in ring.values("sent_ratio")}),
    "pipeline_matches": abs(pipeline["pipeline_loss"] - pipeline["reference_loss"]) < 1e-5,
    "pipeline_learned": pipeline["reference_loss"] < 0.5,
    "elastic_ranks": sorted(int(r) for r in elastic.values("elastic_rank")),
    "elastic_total": sorted(set(elastic.values("total"))),
    "zero3_gib": round(zero["ZeRO stage 3"], 2),
    "elastic_state": elastic_change.state,
    "elastic_worlds": [world for world, *_ in segments],
    "elastic_resumed": all(0 < b[2] - a[3] <= 2 for a, b in zip(segments, segments[1:])),
    "elastic_last_step": segments[-1][3],
    "elastic_last_world": segments[-1][0],
    "elastic_loss_fell": losses[-1] < losses[0] / 10,
}
outcome["ok"] = (
    outcome["ring_same"] == [True]
    and outcome["ring_ranks"] == 4
    and outcome["ring_sent_ratio"] == [1.5]
    and outcome["pipeline_matches"]
    and outcome["elastic_ranks"] == [0, 1]
    and outcome["elastic_total"] == [2.0]
    and outcome["elastic_state"] == "Succeeded"
    and outcome["elastic_worlds"] == [3, 2, 3]
    and outcome["elastic_resumed"]
    and outcome["elastic_last_step"] == ELASTIC_STEPS - 1
    and outcome["elastic_loss_fell"]
)
outcome
