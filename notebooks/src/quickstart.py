# %% [markdown] title
# # Quickstart: one cell, two processes
#
# This notebook trains a tiny model with PyTorch **DistributedDataParallel** (DDP) on
# two replicas. On a laptop the replicas are two local processes; on a Kubeflow cluster
# the same cell becomes a `PyTorchJob` with two pods. Nothing else changes.
#
# Three cells: load the extension, run the training cell as a job, look at the result.

# %%
%load_ext jupyter_ddl

# %% [markdown] distribute-line
# `%%distribute` on the first line turns the cell into a job. `--strategy torch-ddp`
# picks PyTorch DDP, `--replicas 2` asks for two processes, and `--wait` keeps the cell
# busy until the job ends (without it the cell returns at once and the job runs in the
# background).
#
# Inside the cell, each replica already has a few names set for it: `rank` (0 or 1),
# `world_size` (2), and `report(...)`, which sends metrics back to the notebook. The
# process group is set up before the cell starts, so wrapping the model in
# `DistributedDataParallel` is all it takes to average gradients over the replicas.
# Every replica builds the same data and trains on its own half of it.

# %%
%%distribute --strategy torch-ddp --replicas 2 --wait
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

torch.manual_seed(0)
x = torch.randn(512, 8)
y = x @ torch.arange(1.0, 9.0).unsqueeze(1) + 0.1 * torch.randn(512, 1)
x, y = x[rank::world_size], y[rank::world_size]  # this replica's half

model = DDP(torch.nn.Linear(8, 1))  # gradients are averaged over all replicas
opt = torch.optim.SGD(model.parameters(), lr=0.2)
for step in range(60):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    if step % 10 == 9:
        report(step=step, loss=loss.item())

checksum = sum(p.sum().item() for p in model.parameters())
report(step=step, loss=loss.item(), checksum=checksum)
print(f"replica {rank} of {world_size}: final loss {loss.item():.4f}, weights checksum {checksum:.6f}")

# %% [markdown] result
# Each replica saw different data, so their losses differ a little, but DDP kept their
# weights identical: the checksums agree. When the job ended, its record replaced the
# live view above (state, the replica table, charts, each replica's last lines); it
# stays in the saved notebook. The job, its logs and its metrics stay available too:
# `%ddl list` shows every job, `%ddl logs NAME` what its replicas printed, and
# `jobs.results(NAME)` below reads the job's state and its `report(...)` values.

# %%
from jupyter_ddl import default_manager

jobs = default_manager()  # the API behind %%distribute and %ddl
run = jobs.results(_ddl_job)  # `_ddl_job` names the job the cell above started
final = run.latest  # each replica's latest report(...) values, from its log
print(f"job {run.name}: {run.state}")
for replica, values in sorted(final.items()):
    print(f"  {replica}: loss {values['loss']:.4f}, checksum {values['checksum']:.6f}")

outcome = {
    "state": run.state,
    "replicas": len(final),
    "final_loss": max(v["loss"] for v in final.values()),
    "replicas_agree": len({round(v["checksum"], 6) for v in final.values()}) == 1,
}
outcome["ok"] = outcome["state"] == "Succeeded" and outcome["replicas_agree"]
outcome

# %% [markdown] ex-replicas
# ### Try this
#
# Run the training cell again with `--replicas 3`.
# **Expected:** three replicas (`master-0`, `worker-0`, `worker-1`), each training on
# its own third of the data. Their final **losses differ** (each measured its own
# third), their **checksums agree** (DDP applied the same averaged update everywhere).

# %% solution
%%distribute --strategy torch-ddp --replicas 3 --wait
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

torch.manual_seed(0)
x = torch.randn(512, 8)
y = x @ torch.arange(1.0, 9.0).unsqueeze(1) + 0.1 * torch.randn(512, 1)
x, y = x[rank::world_size], y[rank::world_size]  # this replica's third

model = DDP(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.2)
for step in range(60):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
checksum = sum(p.sum().item() for p in model.parameters())
report(loss=loss.item(), checksum=checksum)
print(f"replica {rank} of {world_size}: loss {loss.item():.4f}, checksum {checksum:.6f}")

# %% solution
three = jobs.results(_ddl_job).latest
print({replica: (round(v["loss"], 4), round(v["checksum"], 6)) for replica, v in three.items()})
assert len(three) == 3 and len({round(v["checksum"], 6) for v in three.values()}) == 1
