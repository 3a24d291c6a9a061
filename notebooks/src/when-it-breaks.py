# %% [markdown] title
# # When it breaks: crashes, hangs, memory, restarts, cancel
#
# A distributed job fails in ways a single process does not: one rank crashes and the
# others report a *different* error; one rank hangs and the others wait for it forever;
# a restart helps only if the failure was passing. This notebook breaks jobs on
# purpose and shows where to look. Each step says what you should see; the cells after
# it check that the failure happened as described.
#
# Cells marked as failing on purpose show the job's record (its state, the root cause,
# the replica table and each replica's last lines), then the job's one-line error; the
# notebook goes on after them (they carry the `raises-exception` tag).

# %%
%load_ext jupyter_ddl

# %%
import os
import time

from jupyter_ddl import default_manager

jobs = default_manager()  # the API behind %%distribute and %ddl


def replicas(name):
    """Each replica's state, exit code and restarts, as %ddl status shows them."""
    return {r.id: (r.state.value, r.exit_code, r.restarts) for r in jobs.get(name).replicas}


def failed_first(name):
    """The failed replica whose own output ended first: the likely cause. Peers that
    lost it fail a moment later, with an error about the connection."""
    last_output = {}
    for line in jobs.logs(name):
        if line.stream != "ddl" and line.time is not None:  # ddl: jupyter-ddl's own notes
            last_output[line.replica] = line.time
    failed = [r.id for r in jobs.get(name).replicas if r.state.value == "Failed"]
    return min(failed, key=lambda rid: last_output.get(rid, float("inf")))

# %% [markdown] crash
# ## 1. One rank crashes
#
# Three replicas (rank 0, 1 and 2). Rank 2 stops with exit code 3 before the first
# all-reduce; ranks 0 and 1 are already in it. `--restart-policy Never` keeps the
# crash from being retried, so we see it at once.
#
# **What you should see:** the cell fails with one line,
# `job ... failed: worker-1 · rank 2 failed first: exit code 3 (last lines: ...); then ...`.
# It names the replica that failed first, its rank and its last lines; the replicas
# after "then" only *noticed* the crash (their error says "Connection closed by peer").
# Above that line, the job's record shows the same root cause with the replica table.

# %% raises
%%distribute --strategy torch-ddp --replicas 3 --restart-policy Never --wait
import sys

import torch
import torch.distributed as dist

print(f"rank {rank}: starting", flush=True)
if rank == 2:
    print("rank 2: cannot read my data shard, giving up", flush=True)
    sys.exit(3)
total = torch.ones(1)
dist.all_reduce(total)  # ranks 0 and 1 wait here for rank 2
print("not reached", flush=True)

# %% [markdown] crash-who
# `%ddl status` prints what the record shows: a header (job, strategy, backend, state,
# time, restarts against the backoff limit), the root cause with its last lines and
# the replicas that failed after it ("then:"), and the replica table: each replica
# with its rank, state, restarts, exit code, latest metric and resources.

# %%
crashed = _ddl_job
%ddl status $crashed

# %% [markdown] crash-first
# Which replica failed *first*? Every failed replica has an exit code, but only one
# caused the others to fail. jupyter-ddl names it as the root cause (the record and
# `%ddl status` show it first): among the failed replicas, the first to end whose
# error does not read as a lost peer. You can find it by hand too, on any cluster:
# `failed_first` looks at the time of each replica's last output line, since the
# cause stopped talking first. Then read that replica's own log.

# %%
from jupyter_ddl import diagnose, outcomes

cause = failed_first(crashed)
root = diagnose(outcomes(jobs.get(crashed).replicas)).root  # what %ddl status shows first
print("failed first, by the logs:", cause, replicas(crashed)[cause])
print("root cause, by jupyter-ddl:", root.label, "-", root.summary)
%ddl logs $crashed --replica $cause

# %%
crash_replicas = replicas(crashed)
assert jobs.get(crashed).state.value == "Failed"
assert cause == root.replica == "worker-1", (cause, root)
assert crash_replicas["worker-1"][:2] == ("Failed", 3), crash_replicas
assert "not reached" not in " ".join(line.text for line in jobs.logs(crashed))

# %% [markdown] ex-master-predict
# ### Predict first
#
# Before you read on: if the replica that cannot read its data is rank 0, the Master
# (it also hosts the rendezvous the others connected to), which replica will the root
# cause name, and what will the other two report? Write your guess in the next cell.

# %%
prediction = "worker-1"  # your guess: master-0, worker-0 or worker-1

# %% [markdown] ex-master
# ### Try this
#
# Copy the crash cell of section 1 into a new cell, change `if rank == 2:` to
# `if rank == 0:` and drop `--wait` (the job runs in the background), run it, then
# check it with `jobs.wait(_ddl_job)` and `diagnose`, as in the cell after the crash.
# **Expected:** the job fails; the root cause is `master-0 · rank 0` with exit code 3
# (the job's record and `%ddl status` say so), and
# `worker-0` and `worker-1` follow it after "then", having lost their peer. Was your
# prediction right? The root cause is whoever failed first, not the highest rank.

# %% solution
%%distribute --strategy torch-ddp --replicas 3 --restart-policy Never
import sys

import torch
import torch.distributed as dist

print(f"rank {rank}: starting", flush=True)
if rank == 0:
    print("rank 0: cannot read my data shard, giving up", flush=True)
    sys.exit(3)
total = torch.ones(1)
dist.all_reduce(total)  # ranks 1 and 2 wait here for rank 0
print("not reached", flush=True)

# %% solution
master_crash = jobs.wait(_ddl_job, timeout=120)
found = diagnose(outcomes(master_crash.replicas))
print("your prediction:", prediction, "| root cause:", found.root.label, "-", found.root.summary)
print("then:", [c.replica for c in found.consequences])
%ddl status $_ddl_job
assert master_crash.state.value == "Failed", master_crash.state
assert found.root.replica == "master-0" and found.root.summary.startswith("exit code 3"), found.root

# %% [markdown] crash-lesson
# The replica table names each replica with its rank: rank 2 is `worker-1` (the Master
# is rank 0, `worker-0` rank 1). The other replicas failed with gloo's "Connection
# closed by peer": a symptom, not the cause, so the root cause lists them as its
# consequences. On a cluster it is the same: `kubectl logs` of the pod whose
# container ended first.
#
# ## 2. One rank hangs
#
# Now rank 1 never reaches the all-reduce (it sleeps, as a rank stuck reading a slow
# disk or in a deadlock would), and rank 0 waits in the all-reduce. Nothing fails:
# the job just stops making progress. gloo would give up after its default timeout
# of 30 minutes (`init_process_group(timeout=...)` changes it).
#
# `--timeout 8` stops *waiting* after 8 seconds; the job goes on running.
#
# **What you should see:** after about 8 seconds, a line saying the job is still
# running and how to wait again.

# %%
%%distribute --strategy torch-ddp --replicas 2 --wait --timeout 8
import time

import torch
import torch.distributed as dist

if rank == 1:
    print("rank 1: loading...", flush=True)
    time.sleep(3600)  # stuck
print(f"rank {rank}: entering all_reduce", flush=True)
dist.all_reduce(torch.ones(1))

# %% [markdown] hang-find
# Both replicas are `Running`, and both use no CPU: waiting in a collective looks the
# same as being stuck. Which one is stuck? The one whose log stops *before* the
# collective: a progress line before each collective makes that easy to see. Once
# every replica has printed nothing and used no CPU for `stall_seconds` (60 s by
# default), the local backend's status says so too (`stalled: ... silent for 60 s`);
# the job stays `Running`.

# %%
hung = _ddl_job
%ddl status $hung

# %%
def last_line(name, replica):
    lines = [line.text for line in jobs.logs(name, replica=replica) if line.stream != "ddl"]
    return lines[-1] if lines else ""


# a busy laptop may still be importing torch after 8 s: a slow start is not a hang
deadline = time.time() + 120
while "entering all_reduce" not in last_line(hung, "master-0") and time.time() < deadline:
    time.sleep(0.5)
hang_states = replicas(hung)
stuck = [rid for rid in hang_states if "entering all_reduce" not in last_line(hung, rid)]
print("running:", hang_states, "stuck before the collective:", stuck)
assert {state for state, _, _ in hang_states.values()} == {"Running"}
assert stuck == ["worker-0"]

# %% [markdown] cancel
# ## 3. Cancel
#
# `%ddl cancel` stops every process of the job (on a cluster: deletes its pods). The
# job ends `Cancelled`, its replicas `Terminated`; the logs stay. Each replica's log
# marks where the cancel began; what follows (a peer's "Connection closed by peer"
# while it is being stopped, say) is shown as teardown, not as a failure.

# %%
%ddl cancel $hung

# %%
cancelled = jobs.wait(hung, timeout=30)
print(cancelled.state.value, replicas(hung))
assert cancelled.state.value == "Cancelled"
assert all(state == "Terminated" for state, _, _ in replicas(hung).values())

# %% [markdown] oom
# ## 4. Out of memory
#
# On Kubernetes, `--memory 512Mi` becomes the container's memory limit; a container
# that goes past it is killed by the kernel (SIGKILL, exit code 137, reason
# `OOMKilled`). The local backend does **not** enforce `--memory` (it only records
# it), so this cell sets a limit on itself with `resource.setrlimit` (Linux): the
# process may grow 256 MiB past what it already uses, then asks for 1 GiB. Here the
# allocation fails with an error (exit code 1) instead of a kill, and the replica's
# own traceback names the memory. On a cluster a killed container prints nothing;
# there the root cause reads `exit code 137 (OOMKilled: ...)`, from the pod's status.
#
# **What you should see:** the cell fails with one line that names `master-0` and
# quotes its error (`RuntimeError: ... can't allocate memory ...`); the record above
# it shows the traceback, and the log of `master-0` ends with it.

# %% raises
%%distribute --strategy torch-dp --memory 512Mi --restart-policy Never --wait
import resource

import torch


def address_space():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))


limit = address_space() + 256 * 2**20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
print(f"limit: {limit / 2**30:.2f} GiB of address space; asking for 1 GiB more", flush=True)
big = torch.zeros(256, 1024, 1024)  # 1 GiB of float32

# %%
oom = _ddl_job
oom_tail = [line.text for line in jobs.logs(oom, replica="master-0") if line.stream != "ddl"][-3:]
print(replicas(oom), *oom_tail, sep="\n")
assert jobs.get(oom).state.value == "Failed" and replicas(oom)["master-0"][:2] == ("Failed", 1)
assert any("can't allocate memory" in text for text in oom_tail)

# %% [markdown] restarts
# ## 5. Restart policy and backoff
#
# The operators restart failed replicas according to the **restart policy**:
# `Never` (TFJob's default), `OnFailure` (PyTorchJob's default), `Always`, or `ExitCode`
# (restart on exit codes 128 and above: killed by a signal, e.g. OOMKilled; fail on
# the others, your program's own errors). Each restart waits longer than the last
# (**backoff**: 0.5 s, 1 s, 2 s... here; on a cluster the kubelet's 10 s, 20 s, 40 s...
# up to 5 minutes), and `--backoff-limit` caps the restarts of the whole job
# (jupyter-ddl sets 3 when you give none: the operators' own default never stops).
#
# A restart helps a *passing* failure. This replica fails on its first run only (a
# marker file stands for "the data server was not up yet"):
#
# **What you should see:** the job succeeds; `master-0` shows 1 restart, and the
# header says `restarts 1 of 3 (backoff limit)`.

# %%
%%distribute --strategy torch-dp --restart-policy OnFailure --backoff-limit 3 --wait
import os
import sys
import tempfile

marker = os.path.join(tempfile.gettempdir(), os.environ["JUPYTER_DDL_JOB"] + ".first-run")
if not os.path.exists(marker):
    open(marker, "w").close()
    print("first run: the data server is not up yet", flush=True)
    sys.exit(1)
os.remove(marker)
print("second run: training", flush=True)

# %%
passing = _ddl_job
print(jobs.get(passing).state.value, replicas(passing))
assert jobs.get(passing).state.value == "Succeeded" and replicas(passing)["master-0"][2] == 1

# %% [markdown] backoff
# A failure that does not pass uses up the backoff limit, then fails the job.
# `--backoff-limit 1`: one restart, then `Failed`.
#
# **What you should see:** the cell fails with one line; the header says
# `restarts 1 of 1 (backoff limit)`, and `master-0` shows 1 restart and exit code 2.
# Its log has jupyter-ddl's own note on each end, first
# `master-0 ended with exit code 2; restart 1 (restartPolicy OnFailure)`, then
# `master-0 ended with exit code 2; backoff limit 1 reached`.

# %% raises
%%distribute --strategy torch-dp --restart-policy OnFailure --backoff-limit 1 --wait
import sys

print("the config file has a typo", flush=True)
sys.exit(2)

# %%
exhausted = _ddl_job
notes = [f"{line.time:.1f} {line.text}" for line in jobs.logs(exhausted) if line.stream == "ddl"]
print(replicas(exhausted), *notes, sep="\n")
assert jobs.get(exhausted).state.value == "Failed"
assert replicas(exhausted)["master-0"] == ("Failed", 2, 1)

# %% [markdown] attach
# ## 6. Close the notebook, come back
#
# A job does not belong to the kernel that started it: a supervisor process runs it,
# so it goes on when the kernel restarts or the browser closes. A new kernel finds it
# again (`%ddl list`) and `%ddl attach NAME` brings back its live view. A live view
# whose kernel restarted says "disconnected"; a job that ended left its record in the
# cell instead, which needs no kernel and is kept in the saved notebook.
#
# Here a job runs in the background (no `--wait`); then a *new* `JobManager`, as a
# restarted kernel would make, finds it running.

# %%
%%distribute --strategy torch-ddp --replicas 2
import time

for step in range(600):
    report(step=step)
    time.sleep(0.1)

# %%
from jupyter_ddl import JobManager, load_config

background = _ddl_job
fresh = JobManager(config=load_config())  # what a restarted kernel starts with
deadline = time.monotonic() + 60
while fresh.get(background).state.value == "Pending" and time.monotonic() < deadline:
    time.sleep(0.3)  # the replicas are starting
found = {status.name: status.state.value for status in fresh.list(backend="local")}
print(background, "seen by a new manager as", found[background])
assert found[background] == "Running"
fresh.close()

# %%
%ddl attach $background

# %% [markdown] attach-cancel
# The live view is back. We do not need this job any more:

# %%
%ddl cancel $background

# %% [markdown] ex-never
# ### Try this
#
# Run the passing failure of section 5 again with `--restart-policy Never`.
# **Expected:** the job fails after its first run (exit code 1), with 0 restarts: a
# policy of `Never` turns every passing failure into a failed job. Then try
# `--restart-policy ExitCode`: exit code 1 is a permanent error under that policy, so
# it fails too; an OOM kill (137) would have been retried.

# %% solution
from jupyter_ddl import Exit, RestartPolicy, on_exit

for policy in (RestartPolicy.NEVER, RestartPolicy.ON_FAILURE, RestartPolicy.EXIT_CODE):
    decided = {code: on_exit(policy, code, None).value for code in (0, 1, 137)}
    print(f"{policy.value:10} exit code -> {decided}")

# %% [markdown] summary
# ## What we broke
#
# (The test suite checks these values.)

# %%
cancelled_states = jobs.wait(background, timeout=30).state.value
outcome = {
    "crash": {"state": jobs.get(crashed).state.value, "failed_first": cause,
              "exit_code": crash_replicas[cause][1]},
    "hang": {"stuck": stuck, "after_cancel": cancelled.state.value},
    "oom": {"state": jobs.get(oom).state.value, "exit_code": replicas(oom)["master-0"][1]},
    "passing": {"state": jobs.get(passing).state.value, "restarts": replicas(passing)["master-0"][2]},
    "exhausted": {"state": jobs.get(exhausted).state.value, "restarts": replicas(exhausted)["master-0"][2]},
    "background": cancelled_states,
}
outcome["ok"] = outcome == {
    **outcome,
    "crash": {"state": "Failed", "failed_first": "worker-1", "exit_code": 3},
    "hang": {"stuck": ["worker-0"], "after_cancel": "Cancelled"},
    "oom": {"state": "Failed", "exit_code": 1},
    "passing": {"state": "Succeeded", "restarts": 1},
    "exhausted": {"state": "Failed", "restarts": 1},
    "background": "Cancelled",
}
outcome
