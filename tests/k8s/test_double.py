"""The API double itself, through the real client: what the backend relies on must
behave like a real API server (discovery, 410 for a too-old resourceVersion, pod log
options, label selectors, ownerReference garbage collection)."""

from __future__ import annotations

import time

import pytest
from kubernetes import client, config, watch


@pytest.fixture
def api(kubeconfig):
    c = config.new_client_from_config(str(kubeconfig))
    yield c
    c.close()


def _pod(name, labels, command, restart="Never"):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team-a", "labels": labels},
            "spec": {"restartPolicy": restart, "containers": [{"name": "main", "image": "img", "command": command}]}}  # fmt: skip


def wait_phase(core, name, phases, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = core.read_namespaced_pod(name, "team-a")
        if pod.status and pod.status.phase in phases:
            return pod
        time.sleep(0.1)
    raise AssertionError(f"{name} never reached {phases}")


def test_discovery_tells_mpijob_versions_apart(api, double):
    co = client.CustomObjectsApi(api)
    assert "mpijobs" in {r.name for r in co.get_api_resources("kubeflow.org", "v2beta1").resources}
    double.catalog.crds = ["MPIJob/v1"]
    assert "mpijobs" in {r.name for r in co.get_api_resources("kubeflow.org", "v1").resources}
    with pytest.raises(client.ApiException) as e:
        co.get_api_resources("kubeflow.org", "v2beta1")
    assert e.value.status == 404


def test_log_options_previous_tail_since_and_restart(api, double):
    core = client.CoreV1Api(api)
    script = "import sys\nfor i in range(5): print('line', i)\nsys.exit(1)"
    double.store.create(
        "core/v1/pods", _pod("crashy", {"app": "x"}, ["python", "-c", script], restart="OnFailure")
    )
    deadline = time.monotonic() + 20
    while True:
        cs = core.read_namespaced_pod("crashy", "team-a").status.container_statuses
        if cs and cs[0].restart_count >= 1 and cs[0].last_state.terminated:
            break
        assert time.monotonic() < deadline
        time.sleep(0.1)
    prev = core.read_namespaced_pod_log("crashy", "team-a", previous=True)
    assert prev.splitlines() == [f"line {i}" for i in range(5)]
    assert core.read_namespaced_pod_log(
        "crashy", "team-a", previous=True, tail_lines=2
    ).splitlines() == ["line 3", "line 4"]
    assert (
        core.read_namespaced_pod_log("crashy", "team-a", previous=True, since_seconds=3600).count(
            "line"
        )
        == 5
    )
    first = cs[0].last_state.terminated.container_id
    while (
        core.read_namespaced_pod("crashy", "team-a").status.container_statuses[0].restart_count < 2
    ):
        assert time.monotonic() < deadline + 20
        time.sleep(0.1)
    again = core.read_namespaced_pod("crashy", "team-a").status.container_statuses[0]
    assert again.last_state.terminated.container_id != first  # each restart: a new container
    with pytest.raises(client.ApiException) as e:
        core.read_namespaced_pod_log("nope", "team-a")
    assert e.value.status == 404


def test_watch_from_a_compacted_version_is_410_and_selectors_filter(api, double):
    core = client.CoreV1Api(api)
    double.store.create("core/v1/pods", _pod("a", {"app": "x"}, ["true"]))
    double.store.create("core/v1/pods", _pod("b", {"app": "y"}, ["true"]))
    assert [
        p.metadata.name
        for p in core.list_namespaced_pod("team-a", label_selector="app in (x)").items
    ] == ["a"]
    old = core.list_namespaced_pod("team-a").metadata.resource_version
    double.store.create("core/v1/pods", _pod("c", {"app": "x"}, ["true"]))
    double.store.compact()  # the change after ``old`` is no longer in the history
    with pytest.raises(client.ApiException) as e:
        for _ in watch.Watch().stream(
            core.list_namespaced_pod, "team-a", resource_version=old, timeout_seconds=2
        ):
            pass
    assert e.value.status == 410


def test_owner_references_are_garbage_collected(api, double):
    core = client.CoreV1Api(api)
    owner = double.store.create(
        "core/v1/configmaps",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "owner", "namespace": "team-a"},
        },
    )
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
    }
    core.create_namespaced_secret(
        "team-a", {"metadata": {"name": "child", "ownerReferences": [ref]}, "data": {}}
    )
    core.delete_namespaced_config_map(
        "owner", "team-a", body=client.V1DeleteOptions(propagation_policy="Foreground")
    )
    assert double.store.get("core/v1/secrets", "team-a", "child") is None


def test_the_log_of_a_pod_on_no_node_is_empty_not_an_error(api, double):
    """kube-apiserver's LogLocation gives an empty location for a pod not yet assigned
    a node, and the request answers 200 with no body (kubernetes
    ``pkg/registry/core/pod/strategy.go``); a bound but waiting container answers 400."""
    core = client.CoreV1Api(api)
    double.scenario.unschedulable["nowhere"] = "0/1 nodes are available: 1 Insufficient cpu."
    core.create_namespaced_pod("team-a", _pod("nowhere", {}, ["true"]))
    wait_phase(core, "nowhere", {"Pending"})
    time.sleep(0.5)
    assert core.read_namespaced_pod_log("nowhere", "team-a") == ""
    assert core.read_namespaced_pod_log("nowhere", "team-a", follow=True) == ""
