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
    # a count of 1 covers both the second container's run and its back-off after it
    # crashed (the kubelet counts a restart when the next container starts), so `first`
    # may be the second container: two more restarts make sure a newer one ended
    seen = cs[0].restart_count
    while (
        core.read_namespaced_pod("crashy", "team-a").status.container_statuses[0].restart_count
        < seen + 2
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


def test_configmap_binary_data_reaches_the_volume_byte_for_byte(api, double):
    """A ConfigMap's ``binaryData`` is mounted as the bytes it holds (the kubelet's
    configMap volume writes them unchanged); a lossy decode would corrupt them."""
    import base64

    core = client.CoreV1Api(api)
    blob = bytes(range(256))
    core.create_namespaced_config_map("team-a", {"metadata": {"name": "blob"},
        "binaryData": {"b.bin": base64.b64encode(blob).decode()}})  # fmt: skip
    pod = _pod("reader", {}, ["python", "-c", "import sys, hashlib; "
               "print(hashlib.sha256(open('/data/b.bin', 'rb').read()).hexdigest())"])  # fmt: skip
    pod["spec"]["volumes"] = [{"name": "d", "configMap": {"name": "blob"}}]
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "d", "mountPath": "/data"}]
    core.create_namespaced_pod("team-a", pod)
    wait_phase(core, "reader", {"Succeeded", "Failed"})
    import hashlib

    assert (
        core.read_namespaced_pod_log("reader", "team-a").strip() == hashlib.sha256(blob).hexdigest()
    )


def test_var_references_expand_as_the_kubelet_does(api, double):
    """``$(VAR)`` in command, args and env values names a variable of the container
    (env values: one defined before); undefined stays as written; ``$$`` is ``$``."""
    core = client.CoreV1Api(api)
    pod = _pod("expand", {}, ["python", "-c", "import os, sys; print(sys.argv[1:], os.environ['WHO'])",
                              "$(GREETING)", "$(NOPE)", "$$(GREETING)"])  # fmt: skip
    pod["spec"]["containers"][0]["env"] = [{"name": "NAME", "value": "world"},
                                           {"name": "GREETING", "value": "hello-$(NAME)"},
                                           {"name": "WHO", "value": "$(LATER)"},
                                           {"name": "LATER", "value": "x"}]  # fmt: skip
    core.create_namespaced_pod("team-a", pod)
    wait_phase(core, "expand", {"Succeeded", "Failed"})
    out = core.read_namespaced_pod_log("expand", "team-a").strip()
    assert out == "['hello-world', '$(NOPE)', '$(GREETING)'] $(LATER)", out


def test_a_pod_waits_in_container_creating_while_its_image_pulls(api, double):
    """Before its container runs, a placed pod is Pending with ContainerCreating and
    the kubelet records Pulling and Pulled."""
    core = client.CoreV1Api(api)
    double.scenario.pull_seconds = 1.5
    core.create_namespaced_pod("team-a", _pod("pulling", {}, ["true"]))
    pod = wait_phase(core, "pulling", {"Pending"})
    deadline = time.monotonic() + 5
    while not (pod.status.container_statuses and pod.status.container_statuses[0].state.waiting):
        assert time.monotonic() < deadline, pod.status
        time.sleep(0.05)
        pod = core.read_namespaced_pod("pulling", "team-a")
    assert pod.status.container_statuses[0].state.waiting.reason == "ContainerCreating"
    wait_phase(core, "pulling", {"Succeeded"})
    reasons = {e.reason for e in core.list_namespaced_event("team-a").items
               if e.involved_object.name == "pulling"}  # fmt: skip
    assert {"Pulling", "Pulled"} <= reasons, reasons
