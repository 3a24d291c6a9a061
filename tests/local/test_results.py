"""``JobManager.results``: a job's state, message and reports in one call, as the
workshop notebooks read their jobs. Real local jobs, read back through the job API."""

from __future__ import annotations

import pytest

from jupyter_ddl.manager import JobManager, JobResults
from jupyter_ddl.models import RestartPolicy
from tests.local.conftest import submit, wait

TRAIN = """
for step in range(3):
    report(step=step, loss=(rank + 1) / (step + 1))
print(f"rank {rank} done", flush=True)
report(checksum=10.0 + rank)
"""

CRASH = """
import sys

report(loss=0.5)
print("cannot read my data shard", flush=True)
sys.exit(3)
"""


def test_results_reads_state_and_reports_in_log_order():
    pairs = [("master-0", {"loss": 2.0}), ("worker-0", {"loss": 1.0}), ("master-0", {"ok": 1.0})]
    run = JobResults("j", "Succeeded", None, pairs)
    assert run.latest == {"master-0": {"loss": 2.0, "ok": 1.0}, "worker-0": {"loss": 1.0}}
    assert run.values("loss") == [2.0, 1.0]
    assert run.values("loss", replica="worker-0") == [1.0]
    assert run.values("missing") == []


@pytest.mark.slow
def test_results_of_a_succeeded_and_a_failed_job(backend, data_dir):
    jobs = JobManager()
    ok = submit(backend, TRAIN, "torch-ddp", {"Master": 1, "Worker": 1}, dist_backend="gloo")
    failed = submit(backend, CRASH, "torch-dp", {"Master": 1}, restart_policy=RestartPolicy.NEVER)
    assert wait(backend, ok).state.value == "Succeeded"
    assert wait(backend, failed).state.value == "Failed"

    run = jobs.results(ok)
    assert (run.name, run.state, run.message) == (ok, "Succeeded", None)
    assert len(run.reports) == 8  # every report() of both replicas, the step left out
    assert [v for r, v in run.reports if r == "master-0"] == [
        {"loss": 1.0}, {"loss": 0.5}, {"loss": 1 / 3}, {"checksum": 10.0},
    ]  # fmt: skip
    assert run.latest == {
        "master-0": {"loss": 1 / 3, "checksum": 10.0},
        "worker-0": {"loss": 2 / 3, "checksum": 11.0},
    }
    assert sorted(run.values("checksum")) == [10.0, 11.0]
    assert run.values("loss", replica="worker-0") == [2.0, 1.0, 2 / 3]

    crashed = jobs.results(failed, backend="local")
    assert crashed.state == "Failed" and crashed.reports == [("master-0", {"loss": 0.5})]
    # The message leads with the root cause: the replica, its rank, how it ended.
    assert crashed.message is not None
    assert crashed.message.startswith("master-0 · rank 0 failed first: exit code 3"), crashed
