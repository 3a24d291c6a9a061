"""Scenarios on both tiers: what the cluster refuses, and that the user hears it in the
cell. A pod refused by a validating webhook and by a ResourceQuota (the operator, not
the user, creates pods: the refusal arrives as the operator's event on the job), and an
RBAC denial the pre-flight finds before anything is written.
"""

from __future__ import annotations

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.errors import PermissionDenied
from jupyter_ddl.models import GangScheduling, JobSpec
from tests.cluster.test_refereed_jobs import RUN_CELL, follow, name, waiting

SLEEP = "import time\ntime.sleep(120)\n"


@pytest.mark.parametrize("refusal", ["webhook", "quota"])
def test_a_refused_worker_pod_is_named_in_the_cell(cluster, refusal):
    if refusal == "webhook":
        cluster.refuse_pods("pods need the label team (policy require-team)", match="-worker-")
        words = "pods need the label team (policy require-team)"
    else:
        cluster.quota("two-pods", {"pods": "1"})
        words = "exceeded quota: two-pods"
    backend = cluster.backend()
    spec = JobSpec(name=name("refused"), strategy="torch-ddp",
                   replicas={"Master": 1, "Worker": 1}, command=RUN_CELL)  # fmt: skip
    backend.submit(spec, build_bundle(SLEEP))
    events = follow(backend, spec.name, 90, until=lambda evs: any(words in m for m in waiting(evs)))
    said = [m for m in waiting(events) if words in m]
    assert said, waiting(events)
    pods = cluster.job_pods(spec.name)
    if refusal == "webhook":  # the policy matches the worker's pod only
        assert pods == [f"{spec.name}-master-0"]
    else:  # one pod fits the quota: whichever the operator made first (the real
        # training-operator walks its replica types in Go map order, so either)
        assert len(pods) == 1 and pods[0] in {f"{spec.name}-master-0", f"{spec.name}-worker-0"}


def test_rbac_denial_found_by_preflight_before_any_write(cluster):
    """A Kubeflow profile's owner (kubeflow-edit in one namespace) may not create
    PodGroups: a gang job is refused at once, naming what is missing, and leaves
    nothing behind."""
    cluster.profile_owner()
    backend = cluster.backend()
    spec = JobSpec(name=name("gang"), strategy="torch-ddp", replicas={"Master": 1, "Worker": 1},
                   command=RUN_CELL, gang=GangScheduling(scheduler="volcano"))  # fmt: skip
    with pytest.raises(PermissionDenied) as e:
        backend.submit(spec, build_bundle(SLEEP))
    msg = str(e.value)
    assert "podgroups" in msg and cluster.namespace in msg and "\n" not in msg, msg
    for rid in ("core/v1/configmaps", "kubeflow.org/v1/pytorchjobs"):
        left = [o["metadata"]["name"] for o in cluster.objects(rid)]
        assert not [n for n in left if n.startswith(spec.name)], left
