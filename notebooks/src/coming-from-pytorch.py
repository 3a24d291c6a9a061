# %% [markdown] title
# # Coming from a PyTorch, Horovod or Ignite script
#
# Three code shapes from the talks and notebooks this workshop grew from, each run
# through `%%distribute` as it was written:
#
# 1. a PyTorch DDP script that sets up its own process group from the environment
#    (`MASTER_ADDR`, `MASTER_PORT`, `RANK`, `WORLD_SIZE`), as written for the
#    PyTorchJob operator or for starting by hand on two machines;
# 2. the Horovod recipe (initialise, pin a GPU, scale the learning rate, wrap the
#    optimizer, broadcast from rank 0, checkpoint on rank 0 only), written with
#    `mpi4py` because Horovod itself does not build against this PyTorch;
# 3. PyTorch Ignite's `idist.Parallel(backend="gloo", nproc_per_node=2)`, which starts
#    its own processes.

# %%
%load_ext jupyter_ddl

# %%
from jupyter_ddl import default_manager

jobs = default_manager()  # jobs.results(NAME): a job's state and its report(...) values

# %% [markdown] ddp
# ## 1. A DDP script with its own `init_process_group`
#
# By hand you would start this on every machine after exporting
# `MASTER_ADDR=10.10.10.2 MASTER_PORT=23456 WORLD_SIZE=2 RANK=0` (and `RANK=1` on the
# second). The operator, and the local backend, export exactly these. The script picks
# NCCL on GPUs and gloo on CPUs (the rule of thumb: NCCL for GPU training, gloo for CPU)
# and only goes distributed when `WORLD_SIZE > 1`. jupyter-ddl sees the
# `init_process_group` call and does not set up a group of its own.

# %%
%%distribute --strategy torch-ddp --replicas 2 --wait
import logging
import os

import torch
import torch.distributed as dist
import torch.nn as nn

WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        return self.fc(x)


def main():
    use_cuda = torch.cuda.is_available()
    backend = dist.Backend.NCCL if use_cuda else dist.Backend.GLOO
    if dist.is_available() and WORLD_SIZE > 1:
        logging.warning("Using distributed PyTorch with %s backend", backend)
        dist.init_process_group(backend=backend)
    device = torch.device("cuda" if use_cuda else "cpu")
    torch.manual_seed(0)
    model = Net().to(device)
    if dist.is_available() and dist.is_initialized():
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(int(os.environ["RANK"]))  # each rank its own data
    x = torch.randn(256, 8, generator=g)
    y = x.sum(1, keepdim=True)
    for epoch in range(40):
        loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
    weights = sum(p.detach().double().sum().item() for p in model.parameters())
    print(f"RANK={os.environ['RANK']} loss {loss.item():.4f} weights {weights:.6f}")
    report(loss=loss.item(), weights=weights)


main()

# %%
ddp = jobs.results(_ddl_job)
ddp

# %% [markdown] horovod
# ## 2. The Horovod recipe, with mpi4py
#
# Horovod's recipe has six steps. Horovod 0.28 does not build against PyTorch 2.13,
# so each step is written here with `mpi4py` (the Horovod call in the comment); with
# a Horovod image the same job runs `horovod.torch` unchanged
# (`mpi-horovod.ipynb` shows its MPIJob).
#
# 1. **Initialise** (`hvd.init()`): every process learns its rank, its local rank on
#    its machine and the number of processes.
# 2. **Pin one GPU per process**, chosen by the local rank (skipped on a CPU).
# 3. **Scale the learning rate** by the number of processes: the global batch grew by
#    that factor (the linear scaling rule; large factors want a warm-up too).
# 4. **Wrap the optimizer** (`hvd.DistributedOptimizer`): it averages the gradients
#    over all processes before each step.
# 5. **Broadcast** rank 0's weights so every process starts from the same point.
# 6. **Checkpoint on rank 0 only**: every process holds the same weights, and several
#    writers to one file corrupt it.

# %%
%%distribute --strategy horovod --workers 2 --wait
import os
import shutil
import tempfile

import torch
from mpi4py import MPI

comm = MPI.COMM_WORLD                                   # hvd.init()
hvd_size, hvd_rank = comm.Get_size(), comm.Get_rank()  # hvd.size(), hvd.rank()
hvd_local_rank = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", 0))  # hvd.local_rank()
if torch.cuda.is_available():
    torch.cuda.set_device(hvd_local_rank)                # pin one GPU per process

torch.manual_seed(hvd_rank)  # different on purpose: the broadcast fixes it
model = torch.nn.Linear(8, 1)
base_lr = 0.05
opt = torch.optim.SGD(model.parameters(), lr=base_lr * hvd_size)  # scale the learning rate
with torch.no_grad():                                   # hvd.broadcast_parameters(..., root_rank=0)
    for p in model.parameters():
        p.copy_(torch.from_numpy(comm.bcast(p.detach().numpy(), root=0)))

g = torch.Generator().manual_seed(100 + hvd_rank)
x = torch.randn(128, 8, generator=g)
y = x @ torch.arange(1.0, 9.0).unsqueeze(1)
checkpoint_dir = os.path.join(tempfile.gettempdir(), os.environ["JUPYTER_DDL_JOB"])
for epoch in range(30):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    for p in model.parameters():                        # hvd.DistributedOptimizer(opt)
        comm.Allreduce(MPI.IN_PLACE, p.grad.numpy(), op=MPI.SUM)
        p.grad /= hvd_size
    opt.step()
    if hvd_rank == 0 and epoch % 10 == 9:                  # checkpoint on rank 0 only
        os.makedirs(checkpoint_dir, exist_ok=True)
        torch.save(model.state_dict(), os.path.join(checkpoint_dir, f"epoch{epoch}.pt"))

weights = sum(p.detach().double().sum().item() for p in model.parameters())
written = sorted(os.listdir(checkpoint_dir)) if hvd_rank == 0 else []
if hvd_rank == 0:  # a real job keeps them on a shared volume; this one tidies up
    shutil.rmtree(checkpoint_dir)
print(f"rank {hvd_rank}/{hvd_size}: lr {opt.param_groups[0]['lr']}, loss {loss.item():.4f}, "
      f"checkpoints {written}")
report(lr=opt.param_groups[0]["lr"], loss=loss.item(), weights=weights, checkpoints=len(written))

# %%
hvd = jobs.results(_ddl_job)
hvd

# %% [markdown] horovodrun
# `horovodrun -np 4 -H localhost:4 python train.py` (one machine, four processes) and
# `horovodrun -np 16 -H server1:4,server2:4,server3:4,server4:4 python train.py` (four
# machines) are `mpirun` underneath: the `-H host:slots` list is the hostfile. On
# Kubernetes the MPIJob's launcher runs it, with one hostfile line per worker pod and
# `slots=` from `slotsPerWorker`.
#
# ## 3. Ignite: `idist.Parallel(backend="gloo", nproc_per_node=2)`
#
# The Ignite practice notebooks start their processes themselves: `nproc_per_node=2`
# makes `idist.Parallel` spawn two processes on this machine, each running `training`.
# Spawning starts fresh Python interpreters, which must find `training` again by name;
# jupyter-ddl's runtime defines the cell's functions for them (in a plain Python
# script, the `if __name__ == "__main__":` guard does that job).
#
# Each replica of a job is one "node" to Ignite. On one machine (one replica) the
# practice notebooks' own line, `idist.Parallel(backend="gloo", nproc_per_node=2)`
# (they ran on Google Colab), runs exactly as written. In a job of two replicas,
# each replica tells Ignite which node it is, from the environment the operator
# gives it:
# `nnodes=world_size, node_rank=rank` and the rendezvous address. Two replicas × two
# spawned processes make a world of four.

# %%
%%distribute --strategy ignite --replicas 2 --wait
import os

import ignite.distributed as idist
import torch


def training(local_rank, config):
    torch.manual_seed(0)
    model = idist.auto_model(torch.nn.Linear(8, 1))
    opt = idist.auto_optim(torch.optim.SGD(model.parameters(), lr=config["lr"]))
    g = torch.Generator().manual_seed(idist.get_rank())
    x = torch.randn(64, 8, generator=g)
    for _ in range(20):
        loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    weights = sum(p.detach().double().sum().item() for p in model.parameters())
    total = float(idist.all_reduce(1.0))  # every process adds 1
    print(f"ignite rank {idist.get_rank()} of {idist.get_world_size()} "
          f"(local {local_rank}, backend {idist.backend()}): weights {weights:.6f}")
    report(ignite_rank=idist.get_rank(), world=idist.get_world_size(), weights=weights,
           processes=total)


with idist.Parallel(backend="gloo", nproc_per_node=2, nnodes=world_size, node_rank=rank,
                    master_addr=os.environ["MASTER_ADDR"],
                    master_port=int(os.environ["MASTER_PORT"])) as parallel:
    parallel.run(training, {"lr": 0.05})

# %%
ignite = jobs.results(_ddl_job)
ignite

# %% [markdown] ex-ignite
# ### Try this
#
# On one machine the source notebook's line is just
# `idist.Parallel(backend="gloo", nproc_per_node=2)`. Run it in a job of a single
# replica (`%%distribute --strategy ignite --replicas 1 --wait`, a Master alone).
# **Expected:** two processes, ranks 0 and 1 of a world of 2, both in `master-0`'s log
# (they share the replica); each prints a sum of ranks of 1.0.
# In a job of several replicas that line would make every replica a "node 0" of its
# own world on the same rendezvous port: the replicas then collide. That is why the
# cell above names the node.

# %% solution
%%distribute --strategy ignite --replicas 1 --wait
import ignite.distributed as idist


def training(local_rank, config):
    total = idist.all_reduce(float(idist.get_rank()))
    print(f"rank {idist.get_rank()} of {idist.get_world_size()}: sum of ranks {total}")
    report(colab_rank=idist.get_rank(), world=idist.get_world_size())


with idist.Parallel(backend="gloo", nproc_per_node=2) as parallel:
    parallel.run(training, {})

# %% solution
colab = jobs.results(_ddl_job)
print(colab)
assert colab.state == "Succeeded" and [r for r, _ in colab.reports] == ["master-0", "master-0"]
assert sorted(int(r) for r in colab.values("colab_rank")) == [0, 1]

# %% [markdown] summary
# ## What we saw
#
# (The test suite checks these values.)

# %%
def agree(run, key="weights"):
    return len({round(value, 6) for value in run.values(key)}) == 1


outcome = {
    "states": {"ddp": ddp.state, "horovod": hvd.state, "ignite": ignite.state},
    "ddp_agree": agree(ddp) and len(ddp.reports) == 2,
    "horovod_lr": sorted(set(hvd.values("lr"))),
    "horovod_checkpoints": sorted(int(n) for n in hvd.values("checkpoints")),
    "horovod_agree": agree(hvd) and len(hvd.reports) == 2,
    "ignite_ranks": sorted(int(r) for r in ignite.values("ignite_rank")),
    "ignite_agree": agree(ignite),
    # the exercise's job; a student copy (generate.py --student) has none until it is done
    "colab_ranks": sorted(int(r) for r in colab.values("colab_rank")) if "colab" in globals() else None,
}
outcome["ok"] = (
    set(outcome["states"].values()) == {"Succeeded"}
    and outcome["ddp_agree"]
    and outcome["horovod_lr"] == [0.1]
    and outcome["horovod_checkpoints"] == [0, 3]
    and outcome["horovod_agree"]
    and outcome["ignite_ranks"] == [0, 1, 2, 3]
    and outcome["ignite_agree"]
    and outcome["colab_ranks"] in ([0, 1], None)
)
outcome
