# %% [markdown] title
# # MPI and Horovod: launcher, workers, hostfile, slots
#
# Horovod (and MPI programs in general) start differently from the PyTorch and
# TensorFlow jobs: there is no rendezvous address in the environment. Instead one
# process, the **launcher**, runs `mpirun`, which starts every training process
# (**rank**) on the machines listed in a **hostfile**:
#
# ```
# job-worker-0.job.team-a.svc slots=1
# job-worker-1.job.team-a.svc slots=1
# ```
#
# Each line is a host; **slots** says how many ranks that host may run (one per GPU,
# usually). `mpirun -n 2` fills the slots in order. The ranks then talk to each other
# through MPI: Horovod's `DistributedOptimizer` averages gradients with an MPI (or
# NCCL) all-reduce, exactly like DDP does with gloo.
#
# On Kubernetes this is an **MPIJob**: one `Launcher` pod that runs `mpirun` (and does
# no training), and `Worker` pods that just wait for the launcher to start ranks in
# them over SSH. The operator writes the hostfile and the SSH keys. On a laptop the
# local backend runs `mpirun` itself with a hostfile that points at this machine.

# %%
%load_ext jupyter_ddl

# %% [markdown] title-2
# Reading results back: every rank writes its `report(...)` values into its log,
# and `jobs.results(NAME)` reads them with the job's state. `_ddl_job` names the job
# the last `%%distribute` cell started; `.latest` holds each replica's latest values,
# `.values("loss")` every reported loss in order.

# %%
from jupyter_ddl import default_manager

jobs = default_manager()  # the one API behind %%distribute and %ddl

# %% [markdown] hello
# ## 1. Hello, ranks
#
# `--strategy horovod --workers 2`: two ranks. Each one learns its rank and the world
# size from MPI and joins an all-reduce: rank 0 contributes 1, rank 1 contributes 2,
# both receive the sum, 3.

# %%
%%distribute --strategy horovod --workers 2 --wait
import os
import socket

from mpi4py import MPI

comm = MPI.COMM_WORLD
total = comm.allreduce(comm.Get_rank() + 1, op=MPI.SUM)
print(f"rank {comm.Get_rank()} of {comm.Get_size()} on {socket.gethostname()}: sum = {total}")
# The launcher's hostfile. Locally every rank runs on the launcher's machine and can
# read it; on a cluster only the launcher pod has it, and this prints nothing.
hostfile = os.environ.get("OMPI_MCA_orte_default_hostfile")
if comm.Get_rank() == 0 and hostfile and os.path.exists(hostfile):
    print("hostfile used by mpirun:")
    print(open(hostfile).read())
report(mpi_rank=comm.Get_rank(), size=comm.Get_size(), allreduce=total)

# %%
hello = jobs.results(_ddl_job)
hello

# %% [markdown] hello-2
# The hostfile the local backend wrote has a single line, `localhost slots=2`: one
# host with room for both ranks. On the cluster the operator writes one line per
# worker pod, each with `slots=` set to `slotsPerWorker` (1 by default), as in the
# example at the top.

# %% [markdown] by-hand
# ## 2. Data-parallel training, the Horovod way, by hand
#
# Horovod does not build on this machine's PyTorch, but what it does is short enough
# to write with `mpi4py`:
#
# 1. start every rank from the same weights: broadcast them from rank 0
#    (`hvd.broadcast_parameters`);
# 2. after `backward()`, sum every gradient over the ranks and divide by their number
#    (`hvd.DistributedOptimizer`);
# 3. step the optimizer: every rank applies the same update.
#
# Each rank trains on its own slice of the data (`rank::world_size`). The runtime
# sets `rank` and `world_size` from the variables `mpirun` gives each process
# (`OMPI_COMM_WORLD_RANK`, `OMPI_COMM_WORLD_SIZE`).

# %%
%%distribute --strategy horovod --workers 2 --wait
import torch
from mpi4py import MPI

comm = MPI.COMM_WORLD
torch.manual_seed(rank)  # different start on purpose: the broadcast fixes it
x = torch.randn(512, 8, generator=torch.Generator().manual_seed(0))
y = x @ torch.arange(1.0, 9.0).unsqueeze(1)
x, y = x[rank::world_size], y[rank::world_size]

model = torch.nn.Linear(8, 1)
with torch.no_grad():
    for p in model.parameters():  # 1. same start everywhere
        p.copy_(torch.from_numpy(comm.bcast(p.detach().numpy(), root=0)))
opt = torch.optim.SGD(model.parameters(), lr=0.2)
for step in range(60):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    for p in model.parameters():  # 2. average the gradients
        grad = p.grad.numpy()  # shares memory with p.grad
        comm.Allreduce(MPI.IN_PLACE, grad, op=MPI.SUM)
        grad /= world_size
    opt.step()  # 3. the same update on every rank

checksum = sum(p.detach().double().sum().item() for p in model.parameters())
print(f"rank {rank}: loss {loss.item():.5f}, checksum {checksum:.6f}")
report(loss=loss.item(), checksum=checksum)

# %%
by_hand = jobs.results(_ddl_job)
by_hand

# %% [markdown] mpijob
# ## 3. The MPIJob for a real Horovod cell
#
# With an image that has Horovod (the configured base image for MPI jobs), the cell
# would look like this. `--dry-run` shows what would be submitted: an `MPIJob`
# (`kubeflow.org/v2beta1`) with a `Launcher` (one replica, no GPU: it only runs
# `mpirun`) and four `Worker`s with one GPU each and `slotsPerWorker: 1`, so four
# ranks. Nothing runs, so Horovod need not be installed here.

# %%
%%distribute --strategy horovod --workers 4 --gpus 1 --dry-run
import horovod.torch as hvd
import torch

hvd.init()
torch.cuda.set_device(hvd.local_rank())
model = torch.nn.Linear(8, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1 * hvd.size())
opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
hvd.broadcast_parameters(model.state_dict(), root_rank=0)

# %% [markdown] ex-workers
# ### Try this
#
# Run the "Hello, ranks" cell with `--workers 3`, after predicting the sum.
# **Expected:** three ranks, 0 to 2, contributing 1, 2 and 3: every rank prints
# `sum = 6`. The hostfile now reads `localhost slots=3`.

# %% solution
%%distribute --strategy horovod --workers 3 --wait
from mpi4py import MPI

comm = MPI.COMM_WORLD
total = comm.allreduce(comm.Get_rank() + 1, op=MPI.SUM)
print(f"rank {comm.Get_rank()} of {comm.Get_size()}: sum = {total}")
report(sum3=total)

# %% solution
three = jobs.results(_ddl_job)
assert three.values("sum3") == [6.0, 6.0, 6.0], three

# %% [markdown] what-we-saw
# ## What we saw
#
# (The test suite checks these values.)

# %%
outcome = {
    "states": {"hello": hello.state, "by_hand": by_hand.state},
    "ranks": sorted(int(r) for r in hello.values("mpi_rank")),
    "allreduce": sorted(set(hello.values("allreduce"))),
    "by_hand_loss": max(by_hand.values("loss")),
    "by_hand_agree": len({round(c, 6) for c in by_hand.values("checksum")}) == 1
    and len(by_hand.reports) == 2,
}
outcome["ok"] = (
    set(outcome["states"].values()) == {"Succeeded"}
    and outcome["ranks"] == [0, 1]
    and outcome["allreduce"] == [3.0]
    and outcome["by_hand_agree"]
    and outcome["by_hand_loss"] < 0.05
)
outcome
