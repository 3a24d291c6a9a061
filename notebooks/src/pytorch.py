# %% [markdown] title
# # PyTorch: DataParallel, DDP, torchrun and Ignite
#
# PyTorch has two ways to train one model on several devices:
#
# - **DataParallel** (`torch.nn.DataParallel`): *one* process. Each batch is split over
#   the GPUs of one machine, the results gathered back on the first GPU. Easy, limited
#   to one machine, and slowed down by Python's global lock.
# - **DistributedDataParallel** (DDP): *one process per device*, on as many machines as
#   you like. Each process computes gradients on its own share of the data, then the
#   processes average gradients with an all-reduce. This is what PyTorch recommends,
#   even on a single machine.
#
# Below we run both, then look at the communication backends (gloo, nccl), `torchrun`
# with several processes per replica, and PyTorch Ignite's `idist`.

# %%
%load_ext jupyter_ddl

# %% [markdown] shared-code
# ## Shared code
#
# These definitions run in the notebook kernel and travel with every `%%distribute`
# cell that uses them. `torch` is imported inside the functions, so the kernel itself
# stays light.

# %%
def make_data(n=512, seed=0):
    """The same generated regression data on every replica: y = x . [1..8] + noise."""
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    y = x @ torch.arange(1.0, 9.0).unsqueeze(1) + 0.1 * torch.randn(n, 1, generator=g)
    return torch.utils.data.TensorDataset(x, y)


def fit(model, loader, epochs=15, lr=0.1):
    """Plain SGD on mean squared error; returns the last batch's loss."""
    import torch

    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(epochs):
        if hasattr(loader.sampler, "set_epoch"):
            loader.sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every rank
        for x, y in loader:
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
    return loss.item()


def checksum(model):
    """One number that changes if any weight differs."""
    return sum(p.detach().double().sum().item() for p in model.parameters())

# %% [markdown] shared-code-2
# Reading results back: every replica writes its `report(...)` values into its log,
# and `jobs.results(NAME)` reads them with the job's state. `_ddl_job` names the job
# the last `%%distribute` cell started; `.latest` holds each replica's latest values,
# `.values("loss")` every reported loss in order.

# %%
from jupyter_ddl import default_manager

jobs = default_manager()  # the one API behind %%distribute and %ddl

# %% [markdown] dataparallel
# ## 1. DataParallel: one replica
#
# `torch-dp` runs one replica (a PyTorchJob with just a Master). With no GPU,
# `DataParallel` simply calls the wrapped model; with four GPUs it would split each
# batch of 64 into four batches of 16.

# %%
%%distribute --strategy torch-dp --wait
import torch

model = torch.nn.DataParallel(torch.nn.Linear(8, 1))
print("GPUs this replica can see:", torch.cuda.device_count())
loader = torch.utils.data.DataLoader(make_data(), batch_size=64, shuffle=True)
loss = fit(model, loader)
report(loss=loss, checksum=checksum(model))

# %%
dp = jobs.results(_ddl_job)
dp

# %% [markdown] ddp
# ## 2. DistributedDataParallel: two replicas
#
# Two processes (a Master and one Worker). Three things make it data parallel:
#
# 1. the process group, which the runtime set up from `MASTER_ADDR`, `RANK` and
#    `WORLD_SIZE` before the cell started (a cell calling `dist.init_process_group()`
#    itself works too);
# 2. `DistributedSampler`, which hands each rank a different half of the data;
# 3. `DistributedDataParallel`, which averages gradients during `backward()`.
#
# Each rank takes batches of 32 from its half, so together the two ranks process the
# same global batch of 64, in the same number of steps, as the DataParallel run: the
# work of each step is split in two.

# %%
%%distribute --strategy torch-ddp --replicas 2 --wait
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

data = make_data()
loader = DataLoader(data, batch_size=32, sampler=DistributedSampler(data, seed=0))
model = DDP(torch.nn.Linear(8, 1))
loss = fit(model, loader)
print(f"rank {rank}: {len(loader)} batches per epoch, last loss {loss:.4f}")
report(loss=loss, checksum=checksum(model))

# %%
ddp = jobs.results(_ddl_job)
ddp

# %% [markdown] ddp-2
# The losses differ (each rank measured its own last batch), the checksums do not:
# every rank applied the same averaged gradients.
#
# ## 3. gloo or nccl?
#
# The process group needs a communication backend:
#
# - **gloo** works on CPUs (and GPUs), over TCP. It is the default without GPUs and
#   what all the jobs here use.
# - **nccl** is NVIDIA's library for GPU-to-GPU all-reduce over NVLink and
#   InfiniBand. It is much faster on GPUs and does not run without them.
# - **mpi** uses an MPI library; PyTorch must be built with it.
#
# jupyter-ddl picks nccl when the replica has GPUs and gloo otherwise;
# `--dist-backend` overrides it. A laptop cannot run an nccl job, but `--dry-run` shows
# what would be submitted to a cluster: note the `nvidia.com/gpu` limits.

# %%
%%distribute --strategy torch-ddp --replicas 2 --gpus 1 --dist-backend nccl --dry-run
import torch
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1).to(device))

# %% [markdown] torchrun
# ## 4. torchrun and `nprocPerNode`
#
# A replica is one pod, and one pod may have several GPUs. With `--nproc-per-node 2`,
# each replica starts `torchrun`, which starts two training processes inside it. Two
# replicas × two processes = a world of four ranks. `RANK` is the global rank,
# `LOCAL_RANK` the process's number inside its replica (the GPU it would use), and
# `GROUP_RANK` the replica's number. On a cluster this becomes the PyTorchJob's
# `spec.nprocPerNode`.

# %%
%%distribute --strategy torch-ddp --replicas 2 --nproc-per-node 2 --wait
import os
import torch
import torch.distributed as dist

ones = torch.ones(1)
dist.all_reduce(ones)  # every rank adds 1
print(f"RANK={os.environ['RANK']} LOCAL_RANK={os.environ['LOCAL_RANK']} "
      f"GROUP_RANK={os.environ['GROUP_RANK']} WORLD_SIZE={os.environ['WORLD_SIZE']}")
report(allreduce=ones.item())

# %% [markdown] torchrun-lines
# The replica table shows one row per replica (a pod on a cluster); the two processes
# torchrun started in it share that row and its log. Their lines tell them apart:

# %%
import re

torchrun = jobs.results(_ddl_job)
torchrun_lines = [line.text for line in jobs.logs(_ddl_job) if line.text.startswith("RANK=")]
torchrun_ranks = sorted(int(re.match(r"RANK=(\d+)", text).group(1)) for text in torchrun_lines)
print(*sorted(torchrun_lines), sep="\n")

# %% [markdown] ignite
# ## 5. PyTorch Ignite's `idist`
#
# `ignite.distributed` (`idist`) wraps the same machinery in a few helpers:
# `idist.Parallel` sets up the process group from the environment, `auto_model` wraps
# the model in DDP, `auto_dataloader` adds the `DistributedSampler` (and divides the
# batch size between the ranks), and Ignite's
# `Engine` runs the loop. The same code runs on one CPU, on several GPUs or on several
# machines.
#
# `idist` reads `RANK`, `WORLD_SIZE` and `LOCAL_RANK`. The operator sets only the
# first two (with one process per replica, `torchrun` is what would set the third), so
# the runtime adds `LOCAL_RANK=0`.

# %%
%%distribute --strategy ignite --replicas 2 --wait
import ignite.distributed as idist
import torch
from ignite.engine import create_supervised_trainer


def training(local_rank, config):
    model = idist.auto_model(torch.nn.Linear(8, 1))
    opt = idist.auto_optim(torch.optim.SGD(model.parameters(), lr=0.1))
    loader = idist.auto_dataloader(make_data(), batch_size=64, shuffle=True)
    trainer = create_supervised_trainer(model, opt, torch.nn.functional.mse_loss)
    trainer.run(loader, max_epochs=15)
    print(f"ignite rank {idist.get_rank()} of {idist.get_world_size()}, backend {idist.backend()}")
    report(loss=trainer.state.output, checksum=checksum(model))


with idist.Parallel(backend="gloo") as parallel:
    parallel.run(training, {})

# %%
ignite_run = jobs.results(_ddl_job)
ignite_run

# %% [markdown] ignite-2
# Every job of this notebook is still listed, with its state; `%ddl logs NAME` shows a
# replica's full log, `%ddl delete NAME` removes a job and its files.

# %%
%ddl list

# %% [markdown] ex-sampler
# ### Try this
#
# In the DDP cell, replace `sampler=DistributedSampler(data, seed=0)` with
# `shuffle=False` and run it again.
# **Expected:** each rank now goes through all 512 samples, 16 batches per epoch
# instead of 8: both ranks see the *same* batches, so their losses are now identical,
# and their checksums still agree. The job does twice the work of one process for
# the same result: without the sampler, data parallelism divides nothing.

# %% solution
%%distribute --strategy torch-ddp --replicas 2 --wait
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader

data = make_data()
loader = DataLoader(data, batch_size=32, shuffle=False)  # no sampler: every rank gets all of it
model = DDP(torch.nn.Linear(8, 1))
loss = fit(model, loader)
print(f"rank {rank}: {len(loader)} batches per epoch, last loss {loss:.4f}")
report(loss=loss, checksum=checksum(model), batches=len(loader))

# %% solution
unsharded = jobs.results(_ddl_job).latest
for replica, v in sorted(unsharded.items()):
    print(f"{replica}: {v['batches']:.0f} batches per epoch, loss {v['loss']:.6f}, checksum {v['checksum']:.6f}")
assert {v["batches"] for v in unsharded.values()} == {16}, unsharded  # all 512 samples each
assert len({round(v["loss"], 6) for v in unsharded.values()}) == 1, unsharded  # the same batches
assert len({round(v["checksum"], 6) for v in unsharded.values()}) == 1, unsharded

# %% [markdown] what-we-saw
# ## What we saw
#
# A summary of the four jobs that ran (the nccl cell was a dry run: nothing ran). The
# test suite checks these values:

# %%
def agree(run):
    return len({round(c, 6) for c in run.values("checksum")}) == 1


runs = {"DataParallel": dp, "DDP": ddp, "torchrun": torchrun, "Ignite": ignite_run}
for name, run in runs.items():
    print(f"{name:13} {run.state:10} {len(run.reports)} report(s)")

outcome = {
    "states": {name: run.state for name, run in runs.items()},
    "dp_loss": dp.values("loss")[-1],
    "ddp_loss": max(ddp.values("loss")),
    "ddp_agree": agree(ddp) and len(ddp.reports) == 2,
    "torchrun_ranks": torchrun_ranks,
    "torchrun_allreduce": sorted(set(torchrun.values("allreduce"))),
    "ignite_agree": agree(ignite_run) and len(ignite_run.reports) == 2,
    "ignite_loss": max(ignite_run.values("loss")),
}
outcome["ok"] = (
    all(state == "Succeeded" for state in outcome["states"].values())
    and outcome["ddp_agree"]
    and outcome["ignite_agree"]
    and outcome["torchrun_ranks"] == [0, 1, 2, 3]
    and max(outcome["dp_loss"], outcome["ddp_loss"], outcome["ignite_loss"]) < 0.1
)
outcome
