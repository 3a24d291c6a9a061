# %% [markdown] title
# # Why distribution helps, and when it does not
#
# The quickstart trains a model with 9 weights. Distributing it makes it *slower*:
# a step is microseconds of arithmetic, and every process added brings messages
# between processes. That is not a fault; it is the lesson of this notebook. We measure training throughput (samples per second) with 1, 2 and 4
# processes for two models at a **fixed global batch**:
#
# - a compute-heavy model: a small convolutional network on 32×32 images, where each
#   of its 15,000 weights is used at every one of the 1,024 pixels;
# - the tiny model of the earlier notebooks (8 inputs, 1 output, 9 weights).
#
# and explain the difference with the cost of the all-reduce.

# %%
%load_ext jupyter_ddl

# %% [markdown] cost
# ## What one step costs
#
# With data parallelism every process holds the whole model. For one step over a
# global batch of `B` samples, each of `N` processes:
#
# 1. computes forward and backward on `B / N` samples: the work **divides by N**;
# 2. all-reduces its gradients: every process ends with the sum of all of them. The
#    volume does **not** divide: with a ring all-reduce each process sends and receives
#    about `2 (N - 1) / N` times the gradients' size (the parallelism notebook writes a
#    ring by hand), and waits for the slowest process.
#
# So a step takes roughly `compute / N + communication(N)`. Distribution pays off when
# the compute of a step is large compared with moving the gradients once: big models
# on big batches. For the 9-weight model the compute is microseconds and the
# communication (a round trip between processes, even on one machine) is much more:
# more processes only add messages.
#
# `make_model` builds both (the jobs below use it too); this cell weighs them: how
# much there is to compute per sample, and how much to all-reduce per step.

# %%
def make_model(name, channels=32):
    """The two models measured: "cnn" (compute-heavy) or "tiny"; returns (model, input shape)."""
    import torch

    if name == "tiny":
        return torch.nn.Linear(8, 1), (8,)
    c = channels
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, c, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(c, c, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(), torch.nn.Linear(c * 16, 10),
    ), (3, 32, 32)


def flops_per_sample(model, shape):
    """Forward + backward FLOPs of one sample (about 3x the forward's multiply-adds x 2)."""
    import torch

    total = 0
    x = torch.zeros(1, *shape)
    for layer in model:
        y = layer(x)
        if isinstance(layer, torch.nn.Conv2d):
            total += 2 * y.numel() * layer.in_channels * layer.kernel_size[0] * layer.kernel_size[1]
        elif isinstance(layer, torch.nn.Linear):
            total += 2 * layer.in_features * layer.out_features
        x = y
    return 3 * total


for name in ("cnn", "tiny"):
    model, shape = make_model(name)
    layers = model if name == "cnn" else [model]
    weights = sum(p.numel() for p in model.parameters())
    flops = flops_per_sample(layers, shape)
    print(f"{name:5} {weights:>7,} weights = {weights * 4 / 1024:6.1f} KiB of gradients to all-reduce; "
          f"{flops:>12,} FLOPs per sample, {flops / weights:6.0f} per weight")

# %% [markdown] cost-reading
# The network computes thousands of FLOPs per weight and sample, the tiny model six.
# Each weight is one gradient value (4 bytes) to all-reduce, so this is the work each
# byte of the all-reduce pays for: per byte sent, the network has a lot of work to
# divide between the processes, the tiny model almost none. (A large fully connected
# model sits in between: many weights, so a large all-reduce, and few FLOPs per
# weight. Such models need big batches, or faster links, to scale.)

# %% [markdown] hardware
# ## The machine
#
# Timings need an **idle machine** and **repeats**: close other notebooks, and read
# the min–max ranges, not only the middle. On CPUs each process is limited to one
# thread here (`torch.set_num_threads(1)`), so `N` processes use `N` cores and the
# comparison is fair; with more processes than cores they share them, and nothing
# speeds up. On a machine with GPUs the same cells give each process its own GPU
# and measure that instead.

# %%
import os

import torch

QUICK = os.environ.get("DDL_WORKSHOP_QUICK", "0")  # "1": fewer steps, the same checks
gpus = torch.cuda.device_count()
cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
# processes that wanted a core, on average over the last minute: other work competing
load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
if gpus:
    sizes = [n for n in (1, 2, 4, 8) if n <= gpus]
    device_kind, channels, global_batch, gpu_flag = "GPU", 128, 1024, "--gpus 1"
else:
    sizes = [1, 2, 4]
    device_kind, channels, global_batch, gpu_flag = "CPU core", 32, 64, ""
processes = sizes[-1]
pair = min(processes, 2)  # the exercise compares 1 and 2 processes
steps, windows = (2, 3) if QUICK == "1" else (8, 5)
print(f"{cores} CPU cores, {gpus} GPU(s): measuring {sizes} processes, one {device_kind} each; "
      f"global batch {global_batch}, {windows} timed windows of {steps} steps")

# %% [markdown] measure-code
# ## The measurement
#
# One job of `processes` processes measures every size: first rank 0 alone, then the
# first 2 ranks, then all 4, each time as its own process group
# (`dist.new_group`) while the other ranks wait at a barrier (waiting costs no CPU).
# Starting one job instead of three saves the start-up of two. For each size and each
# model, `measure` runs a warm-up step, then times `windows` windows of `steps` steps;
# rank 0 reports the global samples per second of each window.
# `DistributedDataParallel` averages the gradients during `backward()`.

# %%
def measure(channels, global_batch, steps, windows, sizes):
    import time

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")

    def timed_steps(model, x, y, group):
        opt = torch.optim.SGD(model.parameters(), lr=0.01)

        def step():
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()

        step()  # warm-up: first-call allocations, DDP's bucket set-up
        out = []
        for _ in range(windows):
            dist.barrier(group=group)
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(steps):
                step()
            if cuda:
                torch.cuda.synchronize()
            t = torch.tensor([time.perf_counter() - start], device=dev)
            dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)  # the slowest sets the pace
            out.append(global_batch * steps / t.item())
        return out

    for k in sizes:
        group = dist.new_group(list(range(k)))  # every rank takes part in creating it
        if rank < k:
            local = global_batch // k
            for name in ("cnn", "tiny"):
                model, shape = make_model(name, channels)
                model = model.to(dev)
                if k > 1:
                    model = DDP(model, process_group=group)
                x = torch.randn(local, *shape, device=dev)
                y = torch.randn(local, 1 if name == "tiny" else 10, device=dev)
                for window, rate in enumerate(timed_steps(model, x, y, group)):
                    if rank == 0:
                        report(processes=k, window=window, batch=global_batch, **{f"{name}_samples_per_s": rate})
        dist.barrier()  # the others wait here for this size to finish


def to_target(target, sizes, batch=64, max_steps=600):
    """Train a small classifier to ``target`` held-out accuracy with 1 and 2 processes:
    once with the global batch fixed, once with ``batch`` per process (the global batch
    grows with N). Rank 0 reports the steps, the seconds and the samples/s to get there."""
    import time

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    teacher = torch.randn(32, 10, generator=g)
    x_all = torch.randn(8192, 32, generator=g)
    y_all = (x_all @ teacher).argmax(1)  # a labelling a model can learn to about 100%
    x_test, y_test = x_all[-1024:], y_all[-1024:]
    for k in [n for n in sizes if n <= 2]:
        group = dist.new_group(list(range(k)))
        for grows, local in ((0, batch // k), (1, batch)):  # 1: the global batch grows with N
            if rank >= k:
                continue
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
            model = DDP(model, process_group=group) if k > 1 else model
            opt = torch.optim.SGD(model.parameters(), lr=0.5)
            dist.barrier(group=group)
            start, steps, acc = time.perf_counter(), 0, 0.0
            while acc < target and steps < max_steps:
                first = ((steps * k + rank) * local) % 7000  # each rank its own slice
                xb, yb = x_all[first:first + local], y_all[first:first + local]
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()
                steps += 1
                if steps % 5 == 0:  # every rank evaluates, so every rank stops together
                    with torch.no_grad():
                        acc = (model(x_test).argmax(1) == y_test).float().mean().item()
            seconds = time.perf_counter() - start
            if rank == 0:
                report(target_processes=k, target_grows=grows, target_steps=steps,
                       target_seconds=seconds, target_acc=acc,
                       target_samples_per_s=steps * local * k / seconds)
        dist.barrier()

# %% [markdown] sweep
# ## 1, 2, 4 processes
#
# `$processes`, `$gpu_flag` and `$QUICK` are Python variables of the cell above:
# IPython puts their values into the magic's line (`--replicas 4`, and `--gpus 1` on a
# GPU machine). A replica starts from the environment a pod would have, not from the
# kernel's, and it runs the cell above again: `--env DDL_WORKSHOP_QUICK=$QUICK` gives
# it the kernel's quick mode, so both count the same windows.

# %%
%%distribute --strategy torch-ddp --replicas $processes $gpu_flag --env DDL_WORKSHOP_QUICK=$QUICK --wait
measure(channels, global_batch, steps, windows, sizes)
to_target(0.85, sizes)

# %%
from jupyter_ddl import default_manager

jobs = default_manager()
sweep = jobs.results(_ddl_job)  # the job's state and every report(...), in order
# the load average just after: the last minute, the sweep's own processes included
load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
state = sweep.state
rates = {}  # (model, processes) -> samples/s of each window
for replica, values in sweep.reports:  # only rank 0 (master-0) reports
    for name in ("cnn", "tiny"):
        if f"{name}_samples_per_s" in values:
            rates.setdefault((name, int(values["processes"])), []).append(values[f"{name}_samples_per_s"])
print(f"job {_ddl_job}: {state}; " + ", ".join(f"{m} x{n}: {len(v)} windows" for (m, n), v in sorted(rates.items())))

# %% [markdown] plot
# ## Samples per second
#
# Each point is the median of the windows; the bars span min to max. The dashed line
# is perfect scaling (N times the 1-process throughput); scaling efficiency is the
# measured throughput divided by that.

# %%
import statistics

import matplotlib.pyplot as plt

counts = sizes
table = {}
for name in ("cnn", "tiny"):
    for n in counts:
        values = sorted(rates[name, n])
        table[name, n] = (statistics.median(values), values[0], values[-1])

fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
for ax, name, title in zip(axes, ("cnn", "tiny"), ("convolutional network", "tiny model (9 weights)")):
    med = [table[name, n][0] for n in counts]
    low = [m - table[name, n][1] for m, n in zip(med, counts)]
    high = [table[name, n][2] - m for m, n in zip(med, counts)]
    ax.errorbar(counts, med, yerr=[low, high], marker="o", capsize=4, label="measured (median, min–max)")
    ax.plot(counts, [med[0] * n for n in counts], "--", color="grey", label="perfect scaling")
    ax.set(title=title, xlabel=f"processes (one {device_kind} each)", ylabel="samples / s", xticks=counts)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

efficiency = {}
for name in ("cnn", "tiny"):
    base = table[name, counts[0]][0]
    for n in counts:
        efficiency[name, n] = table[name, n][0] / (base * n)
        lo, hi = table[name, n][1:]
        print(f"{name:4} {n} process(es): {table[name, n][0]:>10,.0f} samples/s ({lo:,.0f}–{hi:,.0f}), "
              f"speed-up {table[name, n][0] / base:4.2f}x, efficiency {efficiency[name, n]:4.0%}")

# %% [markdown] reading
# ## Reading the plot
#
# The cell below reads *your* numbers, and the machine's load average before the
# sweep (how many processes wanted a core, averaged over the last minute), and says
# what they show. What to expect:
#
# - **The network** speeds up from 1 to 2 processes when 2 cores are free: each
#   process computes half the batch, and the all-reduce of its 60 KiB of gradients
#   costs less than the half step saved. When the load average is near the number of
#   cores or above (another notebook training, a browser, a laptop on battery), the
#   second core is not free, and the network can even get *slower* with 2 processes:
#   that measures the machine, not distribution.
# - **More processes than free cores** do not help: they share cores, so the compute
#   is no faster, and each step waits for more messages. With 4 free cores (or 4
#   GPUs) the 4-process point rises too.
# - **The tiny model gets slower** with every process added: its step is almost all
#   communication.
#
# When does distribution pay off? When `compute / N` saves more than the all-reduce
# costs: more weights *and* more samples per step, fast links between the devices
# (NVLink, InfiniBand; NCCL on GPUs), and overlapping communication with the backward
# pass (DDP sends each bucket of gradients as soon as it is ready). For a model that
# does not fit one device, see the parallelism notebook.

# %%
def scaling_verdict(speedup, n, cores):
    """What a speed-up at n processes on this many cores says, in words."""
    if speedup > 1.05 * min(n, cores):  # more than the cores can give: the baseline was slowed
        return "more than the cores allow: other work slowed the 1-process run"
    if speedup >= 0.8 * n:
        return "scales well"
    if speedup > 1.05:
        return "faster, far from perfect"
    if speedup >= 0.95:
        return "no faster"
    return "slower than one process"


verdicts = {}
for name, label in (("cnn", "convolutional network"), ("tiny", "tiny model")):
    for n in counts[1:]:
        speedup = table[name, n][0] / table[name, counts[0]][0]
        verdicts[f"{name}-{n}"] = scaling_verdict(speedup, n, cores)
        shared = f" ({n} processes on {cores} cores)" if n > cores else ""
        print(f"{label:21} {n} processes: {speedup:4.2f}x, efficiency {speedup / n:4.0%}: "
              f"{verdicts[f'{name}-{n}']}{shared}")
if load_before is None:
    print("this system gives no load average: judge the ranges of the plot instead")
else:
    free = max(0.0, cores - load_before)
    print(f"load average before the sweep: {load_before:.1f} on {cores} cores, about {free:.1f} free: "
          + ("busy, so processes shared cores and these speed-ups measure the machine"
             if free < 2 else "quiet enough for the 2-process point to be fair"))
    print(f"load average just after: {load_after:.1f} (the sweep's own {processes} processes included)")

# %% [markdown] reference
# ## A reference plot, measured elsewhere
#
# The plot below ships with the workshop, in `notebooks/reference/`: the same sweep
# without quick mode, on the machine its title names, with that machine's load while
# it measured (`notebooks/reference.py` measures it again). It is not your machine.
# Put your numbers beside it, not in its place: where yours are lower, the load lines
# above usually say why.

# %%
import json
from pathlib import Path

from IPython.display import Image, display

found = [d for d in (Path("reference"), Path("../reference")) if (d / "why-it-helps.json").exists()]
reference = json.loads((found[0] / "why-it-helps.json").read_text("utf-8")) if found else None
if reference is None:
    print("no reference plot beside this notebook (notebooks/reference/): compare with a neighbour's numbers")
else:
    display(Image(filename=str(found[0] / "why-it-helps.png")))
    print(reference["label"])
    for name, label in (("cnn", "convolutional network"), ("tiny", "tiny model")):
        for n in counts[1:]:
            key = f"{name}-{n}"
            if key in reference["speedup"]:
                print(f"{label:21} {n} processes: yours {table[name, n][0] / table[name, counts[0]][0]:4.2f}x, "
                      f"reference {reference['speedup'][key]:4.2f}x")

# %% [markdown] accuracy
# ## Time to a target accuracy
#
# Samples per second says how fast the steps go; what you wait for is a model that
# is good enough. The same job then trained a small classifier until 85% of a held-out set was
# right, with 1 and with 2 processes, two ways:
#
# - **fixed global batch** (64 samples a step, 32 per process at 2): the same steps
#   as one process, each cheaper, so the time to the target follows the speed-up;
# - **batch per process** (64 each, so 128 a step at 2): more samples per second, but
#   a bigger batch does not halve the steps a model needs (here with the same learning
#   rate), so the time to the target improves less than the throughput, or not at all.
#
# The cell below prints what your run found.

# %%
reached = {}
for _, v in sweep.reports:
    if "target_steps" in v:
        reached[int(v["target_processes"]), int(v["target_grows"])] = v
for (k, grows), v in sorted(reached.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    how = "batch per process" if grows else "fixed global batch"
    print(f"{how:18} {k} process(es): {v['target_steps']:3.0f} steps, {v['target_seconds']:5.2f} s "
          f"to {v['target_acc']:.0%} held-out accuracy, {v['target_samples_per_s']:>8,.0f} samples/s")
for grows, how in ((0, "fixed global batch"), (1, "batch per process")):
    if (1, grows) in reached and (2, grows) in reached:
        one, two = reached[1, grows], reached[2, grows]
        print(f"{how}: 2 processes reach it {one['target_seconds'] / two['target_seconds']:4.2f}x as fast, "
              f"with {two['target_samples_per_s'] / one['target_samples_per_s']:4.2f}x the samples/s")

# %% [markdown] ex-batch
# ### Try this
#
# Set `global_batch = 4` (in the machine cell) and run the sweep and the plot again.
# **Expected:** the network's efficiency at 2 processes drops a lot: each process now
# computes 2 images a step while the all-reduce and the barrier cost what they cost
# before. The smaller the work per step, the more the fixed communication cost shows.

# %% solution
%%distribute --strategy torch-ddp --replicas $pair $gpu_flag --env DDL_WORKSHOP_QUICK=$QUICK --wait
# both global batches in one job, back to back, so that other work on the machine
# weighs on both alike; a step of 4 images is short: 4 times the steps per window
measure(channels, global_batch, steps, windows, sizes[:pair])
measure(channels, 4, steps * 4, windows, sizes[:pair])

# %% solution
by_batch = {}  # (global batch, processes) -> samples/s of each window
for _, v in jobs.results(_ddl_job).reports:
    if "cnn_samples_per_s" in v:
        by_batch.setdefault((int(v["batch"]), int(v["processes"])), []).append(v["cnn_samples_per_s"])
compared = {}
for batch in (global_batch, 4):
    if (batch, 2) in by_batch:
        one, two = (statistics.median(by_batch[batch, n]) for n in (1, 2))
        compared[batch] = two / (2 * one)
        print(f"convolutional network, global batch {batch:4}: efficiency {compared[batch]:4.0%} at 2 processes")
if compared:
    # every window of both batches was measured; what they say depends on the machine
    assert all(len(v) == windows for v in by_batch.values()), by_batch
    print("smaller batch, lower efficiency: the fixed cost of the all-reduce shows"
          if compared[4] < compared[global_batch] else
          "no drop measured: on a busy machine the windows time the other work too; "
          "run the cell again when the machine is quiet")
else:
    print("one GPU: no 2-process run to compare")

# %% [markdown] summary
# ## What we measured
#
# (The test suite checks these values: the job succeeded, every window was measured,
# and the plot above is stored in the executed notebook.)

# %%
outcome = {
    "state": state,
    "windows": {f"{name}-{n}": len(v) for (name, n), v in sorted(rates.items())},
    "counts": counts,
    "device": device_kind,
    "cnn_speedup_2": table["cnn", 2][0] / table["cnn", 1][0] if 2 in counts else None,
    "tiny_speedup_2": table["tiny", 2][0] / table["tiny", 1][0] if 2 in counts else None,
    "efficiency": {f"{name}-{n}": round(e, 3) for (name, n), e in efficiency.items()},
    "verdicts": verdicts,
    "load_before": load_before,
    "load_after": load_after,
    "cores": cores,
    "gpus": gpus,
    "reference_shown": reference is not None,
    "samples_per_s": {f"{name}-{n}": [round(x, 1) for x in table[name, n]] for (name, n) in table},
    "to_target": {f"{k}-{'grows' if g else 'fixed'}": {
        "steps": int(v["target_steps"]), "seconds": round(v["target_seconds"], 3),
        "accuracy": round(v["target_acc"], 3)} for (k, g), v in reached.items()},
}
outcome["ok"] = (
    state == "Succeeded"
    and len(outcome["windows"]) == 2 * len(counts)
    and all(w == windows for w in outcome["windows"].values())
    and len(reached) == 4
    and all(v["target_acc"] >= 0.85 for v in reached.values())
)
outcome
