"""One backend that cannot be used never hides the others: with the Kubernetes
backend not configured, unreachable, hung, refusing our token or failing TLS, the job
API still lists and finds the local job, quickly, and names the cause in one line."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from jupyter_ddl.config import Config
from jupyter_ddl.errors import (
    BackendUnavailable,
    ClusterUnauthorized,
    ClusterUnreachable,
    JobNotFound,
)
from jupyter_ddl.manager import JobManager
from tests.support import deadends, require

from .conftest import LOCAL_JOB

pytestmark = pytest.mark.timeout(120)

#: generous bound on one call: the figures (see the report) are far below
BOUND_S = 4.0


@contextmanager
def cluster(kind: str, tmp_path) -> Iterator[tuple[str, type[BackendUnavailable], str]]:
    """(KUBECONFIG value, expected error class, expected words) for one dead end."""
    kc = tmp_path / "kubeconfig"
    if kind == "no-kubeconfig":
        yield str(tmp_path / "absent"), BackendUnavailable, "not configured (no kubeconfig at"
    elif kind == "closed-port":
        url = deadends.closed_port_url()
        deadends.write_kubeconfig(kc, url, insecure=True)
        yield str(kc), ClusterUnreachable, f"not reachable at {url}: connection refused"
    elif kind == "hung":
        with deadends.silent_server() as url:
            deadends.write_kubeconfig(kc, url)
            yield str(kc), ClusterUnreachable, f"not reachable at {url}: no answer within 0.5 s"
    elif kind == "expired-token":
        with deadends.http_server() as url:
            deadends.write_kubeconfig(kc, url)
            yield str(kc), ClusterUnauthorized, "refused the credentials (401 Unauthorized)"
    elif kind == "untrusted-tls":
        require.module("cryptography")
        with deadends.http_server(tls_dir=tmp_path / "tls") as url:
            deadends.write_kubeconfig(kc, url)
            yield (
                str(kc),
                ClusterUnreachable,
                f"not reachable at {url}: TLS failed (certificate verify failed",
            )
    else:
        raise AssertionError(kind)


KINDS = ["no-kubeconfig", "closed-port", "hung", "expired-token", "untrusted-tls"]


def timed(fn, *args, **kwargs):
    start = time.monotonic()
    out = fn(*args, **kwargs)
    return out, time.monotonic() - start


@pytest.mark.parametrize("kind", KINDS)
def test_list_and_find_keep_the_local_job(kind, isolated, tmp_path, monkeypatch):
    with cluster(kind, tmp_path) as (kubeconfig, error, words):
        monkeypatch.setenv("KUBECONFIG", kubeconfig)
        manager = JobManager(Config(kube_read_timeout=0.5))
        try:
            listing, first_s = timed(manager.listing)
            assert [j.name for j in listing.jobs] == [LOCAL_JOB]
            assert [u.backend for u in listing.unavailable] == ["kubernetes"]
            down = listing.unavailable[0]
            assert down.error == error.__name__ and words in down.message, down
            assert down.message.startswith("kubernetes: ") and "\n" not in down.line
            assert first_s < BOUND_S

            # within the retry window the cluster is not asked again (the very same
            # reason comes back, not a new one), but it is still named
            again, again_s = timed(manager.listing)
            assert again.unavailable[0] is down and again_s < BOUND_S

            with pytest.raises(JobNotFound) as e:
                manager.get("no-such-job")
            text = str(e.value)
            assert "no job named 'no-such-job' in local" in text and words in text
            assert "\n" not in text
            assert manager.get(LOCAL_JOB).state.value == "Succeeded"
            assert [ln.text for ln in manager.logs(LOCAL_JOB)] == ["local replica ran"]
            print(f"\n{kind}: first list {first_s:.3f} s, cached {again_s:.3f} s: {down.line}")
        finally:
            manager.close()


@pytest.mark.parametrize("kind", KINDS)
def test_the_kubernetes_backend_itself_raises_one_line(kind, isolated, tmp_path, monkeypatch):
    from jupyter_ddl.backends.kubernetes import KubernetesBackend

    with cluster(kind, tmp_path) as (kubeconfig, error, words):
        b = KubernetesBackend(Config(kube_read_timeout=0.5), kubeconfig=kubeconfig)
        try:
            for call in (b.list, lambda: b.get("x"), b.capabilities):
                with pytest.raises(error) as e:
                    call()
                assert words in str(e.value) and "\n" not in str(e.value)
                assert e.value.http_status == 503
        finally:
            b.close()


def test_a_default_kubernetes_backend_that_is_down_still_finds_local_jobs(isolated):
    manager = JobManager(Config(backend="kubernetes"))
    try:
        assert manager.get(LOCAL_JOB).backend == "local"
        assert [j.name for j in manager.list()] == [LOCAL_JOB]
    finally:
        manager.close()


def test_an_explicit_backend_still_raises(isolated):
    manager = JobManager()
    try:
        with pytest.raises(BackendUnavailable, match="not configured"):
            manager.list(backend="kubernetes")
    finally:
        manager.close()


@pytest.fixture
def never_set_up(isolated, tmp_path, monkeypatch):
    """A machine where Kubernetes was never set up: no KUBECONFIG, no ~/.kube/config,
    not in a pod."""
    require.module("kubernetes")
    import kubernetes.config.kube_config as kube_config

    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(tmp_path / "none"))
    return isolated


def test_a_local_only_user_is_told_nothing_about_kubernetes(never_set_up):
    manager = JobManager(Config())
    try:
        listing = manager.listing()
        assert [j.name for j in listing.jobs] == [LOCAL_JOB] and listing.unavailable == []
        with pytest.raises(JobNotFound) as e:
            manager.get("no-such-job")
        assert "kubernetes" not in str(e.value)
        # asked by name, it still says why it cannot be used
        with pytest.raises(BackendUnavailable, match="kubernetes: not configured"):
            manager.list(backend="kubernetes")
    finally:
        manager.close()


def test_a_user_who_chose_kubernetes_is_told_it_is_not_configured(never_set_up):
    manager = JobManager(Config(backend="kubernetes"))
    try:
        listing = manager.listing()
        assert [j.name for j in listing.jobs] == [LOCAL_JOB]
        assert [u.message.split(" (")[0] for u in listing.unavailable] == [
            "kubernetes: not configured"
        ]
    finally:
        manager.close()
