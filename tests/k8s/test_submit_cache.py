"""A submit's pre-flight at the floor: what one submit learnt is not asked again by the
next, and is forgotten when the cluster says it went stale (a Role taken away, a CRD
removed); an access review is kept only ``kube_access_cache_seconds``."""

from __future__ import annotations

import uuid

import pytest

from jupyter_ddl.backends.kubernetes.checkcache import CheckCache, parallel
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.errors import BackendUnavailable, PermissionDenied
from jupyter_ddl.models import JobSpec


def spec() -> JobSpec:
    return JobSpec(name=f"c-{uuid.uuid4().hex[:6]}", strategy="torch-ddp",
                   replicas={"Master": 1, "Worker": 1})  # fmt: skip


def asked(double, since: int) -> dict[str, int]:
    """What kinds of round trip the submits since ``since`` made."""
    out = {"discovery": 0, "reviews": 0, "creates": 0}
    for method, path in double.state.requests[since:]:
        if path.startswith("/apis/kubeflow.org") and "namespaces" not in path or path == "/apis":
            out["discovery"] += 1
        elif "selfsubjectaccessreviews" in path:
            out["reviews"] += 1
        elif method == "POST":
            out["creates"] += 1
    return out


def configmaps(double) -> list[str]:
    return sorted(
        o["metadata"]["name"] for o in double.store.list("core/v1/configmaps", "team-a")[0]
    )


def test_a_second_submit_asks_nothing_the_first_learnt(backend, double):
    start = len(double.state.requests)
    backend.submit(spec(), build_bundle("pass\n"))
    first = asked(double, start)
    assert first["discovery"] >= 2 and first["reviews"] == 5, first
    start = len(double.state.requests)
    backend.submit(spec(), build_bundle("pass\n"))
    assert asked(double, start) == {"discovery": 0, "reviews": 0, "creates": first["creates"]}


def test_without_a_cache_time_every_submit_asks_the_reviews(make_backend, double):
    b = make_backend(kube_access_cache_seconds=0)
    b.submit(spec(), build_bundle("pass\n"))
    start = len(double.state.requests)
    b.submit(spec(), build_bundle("pass\n"))
    assert asked(double, start)["reviews"] == 5  # discovery is still kept


def test_a_role_taken_away_after_a_kept_review_is_reported_clearly_and_forgotten(backend, double):
    backend.submit(spec(), build_bundle("pass\n"))  # every review allowed, and kept
    before = configmaps(double)
    double.state.denied |= {("create", "pytorchjobs")}
    with pytest.raises(PermissionDenied) as e:  # the API server's own 403, on the create
        backend.submit(spec(), build_bundle("pass\n"))
    msg = str(e.value)
    assert "create" in msg and "pytorchjobs" in msg and "team-a" in msg and "\n" not in msg
    assert configmaps(double) == before  # the refused job left nothing
    start = len(double.state.requests)
    with pytest.raises(PermissionDenied) as again:  # asked anew: the review says no
        backend.submit(spec(), build_bundle("pass\n"))
    assert asked(double, start)["reviews"] == 5
    assert "the service account may not create pytorchjobs in namespace team-a" in str(again.value)


def test_a_crd_removed_after_discovery_was_kept_is_reported_and_forgotten(backend, double):
    backend.submit(spec(), build_bundle("pass\n"))  # discovery read, and kept
    before = configmaps(double)
    double.catalog.crds = ["TFJob/v1"]  # the PyTorchJob operator was uninstalled since
    with pytest.raises(BackendUnavailable) as e:  # the create's 404, said as a missing CRD
        backend.submit(spec(), build_bundle("pass\n"))
    assert "PyTorchJob" in str(e.value) and "\n" not in str(e.value)
    assert configmaps(double) == before  # its ConfigMap removed again
    start = len(double.state.requests)
    with pytest.raises(BackendUnavailable) as again:  # discovery read anew: refused before a write
        backend.submit(spec(), build_bundle("pass\n"))
    assert asked(double, start)["discovery"] >= 1 and asked(double, start)["creates"] == 0
    assert "CRD is not installed" in str(again.value)


def test_kept_reviews_expire_after_their_time():
    now = [100.0]
    cache = CheckCache(60, clock=lambda: now[0])
    checks = [("create", "kubeflow.org", "pytorchjobs", ""), ("get", "", "pods", "log")]
    assert cache.unchecked("team-a", checks) == checks
    cache.allow("team-a", checks[:1])
    assert cache.unchecked("team-a", checks) == checks[1:]
    assert cache.unchecked("team-b", checks) == checks  # per namespace
    now[0] += 61
    assert cache.unchecked("team-a", checks) == checks
    cache.allow("team-a", checks)
    cache.forget_access("team-a")
    assert cache.unchecked("team-a", checks) == checks
    with pytest.raises(ValueError, match="0–86400"):
        CheckCache(-1)
    cache.close()


def test_side_by_side_checks_raise_the_error_the_first_in_order_would():
    cache = CheckCache(60)

    def fails(text: str):
        def call():
            raise RuntimeError(text)

        return call

    with pytest.raises(RuntimeError, match="first"):
        parallel(cache.pool, [lambda: 1, fails("first"), fails("second")])
    assert parallel(cache.pool, [lambda: 1, lambda: 2]) == [1, 2]
    cache.close()
