"""The replica table's resources column: the latest usage of a running replica, nothing
for one whose process ended (its last sample read "memory 0 B")."""

from __future__ import annotations

from jupyter_ddl.core.states import JobState, JobStatus, ReplicaState, ReplicaStatus
from jupyter_ddl.present.state import DashboardState
from jupyter_ddl.present.text import rows


def _status(state: ReplicaState) -> JobStatus:
    sample = {"cpu_percent": 0.0, "memory_bytes": 0.0}
    return JobStatus(
        name="j",
        backend="local",
        strategy="pytorch-ddp",
        state=JobState.RUNNING,
        replicas=[
            ReplicaStatus("Master", 0, state, rank=0, resources=dict(sample)),
            ReplicaStatus(
                "Worker", 0, ReplicaState.RUNNING, rank=1, resources={"memory_bytes": 2048.0}
            ),
        ],
    )


def test_a_finished_replica_shows_no_usage_and_a_running_one_does():
    for ended in (ReplicaState.SUCCEEDED, ReplicaState.FAILED, ReplicaState.TERMINATED):
        table = {r[0]: r[5] for r in rows(DashboardState.of_status(_status(ended)))}
        assert table["master-0 · rank 0"] == "", ended
        assert table["worker-0 · rank 1"] == "memory 2.0 KiB"
