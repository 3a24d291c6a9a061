"""Graceful deletion of a pod, as kube-apiserver and the kubelet do it (kubernetes
v1.36.3 ``pkg/registry/core/pod/strategy.go``, ``CheckGracefulDelete``, and
``staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go``, ``BeforeDelete``): a pod
on a node keeps existing with ``metadata.deletionTimestamp`` set to now plus its grace
period (the request's, else ``terminationGracePeriodSeconds``, 30 by default) and
``deletionGracePeriodSeconds``, until its kubelet has stopped it; a pod on no node, or
one already Succeeded or Failed, goes at once. One check, run against the API double
(tests/k8s/test_deletion.py) and the real tier (tests/cluster/test_findings_real.py).
"""

from __future__ import annotations

import time
from typing import Any

from jupyter_ddl._util import timestamps

#: a pod that runs until it is stopped; its process dies on the kubelet's SIGTERM
SLEEPER = {
    "apiVersion": "v1",
    "kind": "Pod",
    "spec": {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "main",
                "image": "python:3.11",
                "command": ["python3", "-c", "import time; time.sleep(300)"],
            }
        ],
    },
}


def sleeper(name: str, cpu: str | None = None) -> dict[str, Any]:
    pod: dict[str, Any] = {**SLEEPER, "metadata": {"name": name}}
    if cpu is not None:  # more than any node has: never scheduled
        main = {**SLEEPER["spec"]["containers"][0], "resources": {"requests": {"cpu": cpu}}}
        pod["spec"] = {**SLEEPER["spec"], "containers": [main]}
    return pod


def _read(core: Any, ns: str, name: str) -> dict[str, Any] | None:
    from kubernetes.client import ApiException

    try:
        got: dict[str, Any] = core.api_client.sanitize_for_serialization(
            core.read_namespaced_pod(name, ns)
        )
        return got
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def _until(what: str, check: Any, seconds: float) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {seconds} s")


def check_graceful_deletion(core: Any, ns: str, running: str, unscheduled: str) -> None:
    """``running``: a SLEEPER pod that will run; ``unscheduled``: one no node takes."""
    _until(
        f"{running} running",
        lambda: ((_read(core, ns, running) or {}).get("status") or {}).get("phase") == "Running",
        60,
    )
    _until(
        f"{unscheduled} found unschedulable",
        lambda: any(
            c.get("reason") == "Unschedulable"
            for c in ((_read(core, ns, unscheduled) or {}).get("status") or {}).get("conditions")
            or []
        ),
        60,
    )
    asked = time.time()
    # the answer is the pod as marked (read later it may already be gone: its process
    # dies on SIGTERM at once)
    marked = core.api_client.sanitize_for_serialization(core.delete_namespaced_pod(running, ns))
    md = marked.get("metadata") or {}
    assert md.get("deletionGracePeriodSeconds") == 30, md
    due = timestamps.parse(md["deletionTimestamp"])
    assert due is not None and abs(due - (asked + 30)) < 5, (md["deletionTimestamp"], asked)
    # its process dies on SIGTERM: the kubelet reports it stopped and the pod goes
    _until(f"{running} gone after SIGTERM", lambda: _read(core, ns, running) is None, 20)
    # a pod on no node has nothing to stop: it goes at once
    core.delete_namespaced_pod(unscheduled, ns)
    assert _read(core, ns, unscheduled) is None
