"""Jobs no operator would ever end (operator-contract.md §11.9): an MPIJob worker that
cannot start before its launcher exists, and a pod held by an init container that
can never succeed. jupyter-ddl ends them, Failed with the reason, after a bounded wait."""

from __future__ import annotations

import pytest

from jupyter_ddl.backends.kubernetes import stalls
from jupyter_ddl.backends.kubernetes.status import ANNOTATION_GAVE_UP
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.core.kinds import MPIJOB, PYTORCHJOB
from jupyter_ddl.models import EventKind, JobSpec, JobState

from .apidouble import NAMESPACE
from .test_findings import RUN_CELL, final_state, name, watch

PODS = "core/v1/pods"


def test_an_mpijob_worker_that_cannot_start_ends_the_job(make_backend, double):
    """A worker on an image without sshd fails at container start; mpi-operator never
    makes the launcher and never fails the MPIJob, so without us the cell would wait
    forever. It ends Failed, naming the worker and the runtime's words."""
    double.scenario.no_sshd_images.add("team/nosshd")
    b = make_backend()
    spec = JobSpec(name=name("nosshd"), strategy="horovod", replicas={"Worker": 2},
                   command=RUN_CELL, image="team/nosshd:1")  # fmt: skip
    b.submit(spec, build_bundle("print('never')\n"))
    events = watch(b, spec.name, timeout=40)
    final = [e.status for e in events if e.kind == EventKind.STATUS][-1]
    assert final_state(events) == JobState.FAILED, final
    assert "can never start" in final.message and "/usr/sbin/sshd" in final.message, final.message
    job = double.store.get("kubeflow.org/v2beta1/mpijobs", NAMESPACE, spec.name)
    assert "worker-" in job["metadata"]["annotations"][ANNOTATION_GAVE_UP]
    assert job["spec"]["runPolicy"]["suspend"] is True  # its pods are gone
    assert b.get(spec.name).state == JobState.FAILED  # for anyone who looks later


def test_an_init_container_that_never_pulls_ends_the_job(make_backend, double, monkeypatch):
    """training-operator's ``init-pytorch`` on an image the cluster cannot pull holds
    the worker Pending, uncounted by the operator; after ``PULL_WAIT`` the job ends."""
    monkeypatch.setattr(stalls, "PULL_WAIT", 2.0)
    double.scenario.unpullable_images.add("alpine:3.10")
    b = make_backend()
    spec = JobSpec(name=name("init"), strategy="torch-ddp", replicas={"Master": 1, "Worker": 1},
                   command=RUN_CELL)  # fmt: skip
    b.submit(spec, build_bundle("import time\ntime.sleep(60)\n"))
    events = watch(b, spec.name, timeout=40)
    final = [e.status for e in events if e.kind == EventKind.STATUS][-1]
    assert final_state(events) == JobState.FAILED, final
    assert (
        "worker-0 can never start: init container init-pytorch cannot pull alpine:3.10"
        in final.message
    )


def _pod(kind, role: str, statuses: dict, created: str = "2026-01-01T00:00:00Z") -> dict:
    labels = {"training.kubeflow.org/replica-type": role.lower(), "training.kubeflow.org/replica-index": "0",
              "training.kubeflow.org/job-name": "j", "training.kubeflow.org/operator-name": "x"}  # fmt: skip
    return {"metadata": {"name": f"j-{role.lower()}-0", "labels": labels, "creationTimestamp": created},
            "spec": {"initContainers": [{"name": "init-pytorch", "image": "alpine:3.10"}]},
            "status": statuses}  # fmt: skip


T0 = 1767225600.0  # 2026-01-01T00:00:00Z


@pytest.mark.parametrize(
    ("kind", "role", "status", "now", "expect"),
    [  # an image pull is waited out for PULL_WAIT, then ends the job
     (PYTORCHJOB, "Worker", {"phase": "Pending", "initContainerStatuses": [
         {"name": "init-pytorch", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}, T0 + 60, None),
     (PYTORCHJOB, "Worker", {"phase": "Pending", "initContainerStatuses": [
         {"name": "init-pytorch", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}, T0 + 301,
      "cannot pull alpine:3.10 (ImagePullBackOff) after 5 min"),
     # an init container that keeps failing
     (PYTORCHJOB, "Worker", {"phase": "Pending", "initContainerStatuses": [
         {"name": "init-pytorch", "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
          "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}, T0 + 60,
      "init container init-pytorch failed 3 times (exit code 1, Error)"),
     # a PyTorchJob worker's own crash loop is the operator's to count, not ours
     (PYTORCHJOB, "Worker", {"phase": "Running", "containerStatuses": [
         {"name": "pytorch", "restartCount": 9, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
          "lastState": {"terminated": {"exitCode": 1}}}]}, T0 + 60, None),
     # an MPIJob worker whose sshd keeps failing before the launcher exists
     (MPIJOB, "Worker", {"phase": "Running", "containerStatuses": [
         {"name": "mpi", "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
          "lastState": {"terminated": {"exitCode": 255, "reason": "Error"}}}]}, T0 + 60,
      "its container keeps failing (Error, exit code 255)"),
     (MPIJOB, "Worker", {"phase": "Running", "containerStatuses": [
         {"name": "mpi", "restartCount": 1, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
          "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}, T0 + 60, None)],
)  # fmt: skip
def test_never_starts(kind, role, status, now, expect):
    found = stalls.never_starts(kind, [_pod(kind, role, status)], now=now)
    if expect is None:
        assert found is None, found
    else:
        assert found is not None and expect in found, found
        assert "\n" not in found
