"""A replica's ended event carries its lines: it waits until the lines of its ended
container were read, also when a sidecar keeps the pod running (finding 5) and when the
follower ended with its last lines still queued. Found by CI: under load the event came
first and a watch that stopped at it had no lines."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from jupyter_ddl.backends.kubernetes import items as I
from jupyter_ddl.backends.kubernetes.logstream import Stream
from jupyter_ddl.backends.kubernetes.watch import JobWatcher
from jupyter_ddl.core.kinds import PYTORCHJOB
from jupyter_ddl.core.states import ReplicaState, ReplicaStatus

POD = "mesh-master-0"


def _pod_with_a_sidecar_running() -> dict[str, Any]:
    # the kubelet sorts statuses by name: the mesh's proxy first, still running
    return {
        "metadata": {"name": POD},
        "spec": {"containers": [{"name": "pytorch"}, {"name": "istio-proxy"}]},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {"name": "istio-proxy", "containerID": "c://proxy", "state": {"running": {}}},
                {"name": "pytorch", "containerID": "c://train",
                 "state": {"terminated": {"exitCode": 0}}},
            ],
        },
    }  # fmt: skip


def _watcher_with_an_ended_follower() -> tuple[JobWatcher, Stream, ReplicaStatus]:
    w = JobWatcher(SimpleNamespace(namespace="team-a"), PYTORCHJOB, "mesh")  # type: ignore[arg-type]
    w.pods[POD] = _pod_with_a_sidecar_running()
    follower = Stream(POD, "pytorch", "c://train", "master-0")
    follower.done.set()  # it read the log to its end; its lines sit in the queue
    w.followers["c://train"] = follower
    r = ReplicaStatus(role="Master", index=0, state=ReplicaState.RUNNING, exit_code=0, pod=POD)
    return w, follower, r


def test_an_ended_container_in_a_running_pod_waits_for_its_queued_lines():
    w, follower, r = _watcher_with_an_ended_follower()
    assert not w._lines_in(r)  # its lines are not read yet: the event waits
    list(w._on_follower_done(I.FollowerDone(follower)))  # queued after its last lines
    assert w._lines_in(r)


def test_a_running_container_does_not_hold_its_replica_event():
    w, _, r = _watcher_with_an_ended_follower()
    w.pods[POD]["status"]["containerStatuses"][1]["state"] = {"running": {}}
    r.exit_code = None
    assert w._lines_in(r)  # nothing ended: nothing to wait for
