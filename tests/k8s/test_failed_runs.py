"""A replica's failed run, as a watch saw it, outlives the pod's later states (pure).

training-operator v1.9 deletes every pod of a job past its backoff limit before it
marks the job Failed. By the time the job's end is heard, a pod may be stopped or gone,
and its last state may no longer show the run that failed: the container that raised
was about to be restarted (its current state, not yet its ``lastState``), or the pod
being torn down reports only a waiting container.
"""

from __future__ import annotations

from jupyter_ddl.backends.kubernetes import status as S
from jupyter_ddl.core.kinds import PYTORCHJOB
from jupyter_ddl.models import JobState, ReplicaState

JOB = {
    "metadata": {"name": "j", "labels": {"jupyter-ddl.io/strategy": "torch-ddp"}},
    "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 1}}},
    "status": {"conditions": [{"type": "Failed", "status": "True",
                               "message": "Job j has failed because it has reached the specified backoff limit"}]},
}  # fmt: skip
RAISED = {"exitCode": 1, "reason": "Error", "finishedAt": "2026-01-01T00:00:01Z"}
LINES = {
    "worker-0": ["rank 1: reading", "Traceback (most recent call last):",
                 "ValueError: data shard 1 is corrupt"],
    "master-0": ["rank 0: reading"],
}  # fmt: skip


def pod(role: str, phase: str, *, deleting: bool = False, **cs) -> dict:
    md = {"name": f"j-{role}-0", "uid": f"uid-{role}",
          "labels": {"training.kubeflow.org/replica-type": role, "training.kubeflow.org/replica-index": "0"}}  # fmt: skip
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:03Z"
    return {"metadata": md, "status": {"phase": phase,
                                       "containerStatuses": [{"name": "pytorch", **cs}]}}  # fmt: skip


def test_a_container_about_to_restart_shows_its_failed_run_only_in_its_current_state():
    about = pod("worker", "Running", restartCount=0, state={"terminated": RAISED})
    assert S.own_failure(PYTORCHJOB, about) == RAISED
    restarted = pod("worker", "Running", restartCount=1, state={"running": {}},
                    lastState={"terminated": RAISED})  # fmt: skip
    assert S.own_failure(PYTORCHJOB, restarted) == RAISED
    assert S.own_failure(PYTORCHJOB, pod("worker", "Running", state={"running": {}})) is None
    # what ends once the pod is being deleted was ended by the deletion
    killed = pod("master", "Running", deleting=True, state={"terminated": {"exitCode": 143}})
    assert S.own_failure(PYTORCHJOB, killed) is None


def test_pods_being_torn_down_keep_the_failed_run_the_watch_saw():
    """Both pods still listed, deleted, each reporting only a waiting container (the
    kubelet's restart cut short): the replica that raised fails, with its exit code and
    failure time, and leads; the other was stopped, not left Pending."""
    pods = [
        pod("master", "Pending", deleting=True, restartCount=0,
            state={"waiting": {"reason": "ContainerCreating"}}),
        pod("worker", "Pending", deleting=True, restartCount=0,
            state={"waiting": {"reason": "ContainerCreating"}}),
    ]  # fmt: skip
    seen = {"uid-worker": RAISED}
    st = S.job_status(PYTORCHJOB, JOB, pods, last_lines=LINES, seen_failures=seen)
    assert st.state == JobState.FAILED
    by = {r.id: r for r in st.replicas}
    assert by["worker-0"].state == ReplicaState.FAILED and by["worker-0"].exit_code == 1
    assert by["worker-0"].ended == S.epoch(RAISED["finishedAt"])
    assert by["master-0"].state == ReplicaState.TERMINATED
    assert st.message.startswith("worker-0 failed first: ValueError: data shard 1 is corrupt")
    assert st.message.endswith("reached the specified backoff limit")


def test_a_gone_pod_whose_last_state_is_its_killed_run_keeps_the_run_that_failed():
    """Deleted before the job's end was heard: its last object shows the container the
    deletion killed (143); the run that raised, seen earlier, is the replica's failure."""
    gone = [
        pod("worker", "Running", deleting=True, restartCount=0,
            state={"terminated": {"exitCode": 143, "finishedAt": "2026-01-01T00:00:04Z"}}),
        pod("master", "Running", deleting=True, restartCount=0,
            state={"terminated": {"exitCode": 143, "finishedAt": "2026-01-01T00:00:04Z"}}),
    ]  # fmt: skip
    st = S.job_status(PYTORCHJOB, JOB, [], gone=gone, last_lines=LINES,
                      seen_failures={"uid-worker": RAISED})  # fmt: skip
    by = {r.id: r for r in st.replicas}
    assert (by["worker-0"].state, by["worker-0"].exit_code) == (ReplicaState.FAILED, 1)
    assert by["master-0"].state == ReplicaState.TERMINATED
    assert st.message.startswith("worker-0 failed first: ValueError: data shard 1 is corrupt")
    # a pod of another uid (made again under the same name) does not inherit it
    st = S.job_status(PYTORCHJOB, JOB, [], gone=gone, last_lines=LINES,
                      seen_failures={"uid-other": RAISED})  # fmt: skip
    assert {r.id: r.state for r in st.replicas}["worker-0"] == ReplicaState.TERMINATED
