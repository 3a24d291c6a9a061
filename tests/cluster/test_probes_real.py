"""Probes on the real tier, read as the admin through the API server: a pod whose exec
readiness probe (run inside the container's mount namespace: the file it checks is in
an emptyDir this machine does not see) passes once the container writes that file shows
Ready=False, then True; a pod whose probe keeps failing stays Running and unready, and
the endpoint-slice controller lists it as not ready; mpi-operator, with
`launcherCreationPolicy: WaitForWorkersReady`, makes no launcher while its worker is
unready and makes it once the worker's probe passes. Every container reports an imageID.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from tests.cluster.tier import ADMIN, MARKS, NAMESPACE, built, create, kubectl, wait_for

pytestmark = MARKS

PODS = """
apiVersion: v1
kind: Service
metadata: {{name: {n}}}
spec: {{clusterIP: None, selector: {{app: {n}}}, ports: [{{port: 7000}}]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: {n}-late, labels: {{app: {n}}}}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: python:3.11
    command: [sh, -c, "sleep 6; touch /probe/ready; sleep 300"]
    readinessProbe:
      exec: {{command: [cat, /probe/ready]}}
      periodSeconds: 1
    volumeMounts: [{{name: probe, mountPath: /probe}}]
  volumes: [{{name: probe, emptyDir: {{}}}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: {n}-never, labels: {{app: {n}}}}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: python:3.11
    command: [sleep, "300"]
    readinessProbe:
      tcpSocket: {{port: 7000}}
      periodSeconds: 1
      failureThreshold: 1
"""

MPIJOB = """
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {{name: {n}}}
spec:
  slotsPerWorker: 1
  launcherCreationPolicy: WaitForWorkersReady
  runPolicy: {{cleanPodPolicy: All}}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - name: launcher
            image: python:3.11
            command: [sh, -c, "echo launched"]
    Worker:
      replicas: 1
      template:
        spec:
          terminationGracePeriodSeconds: 1
          containers:
          - name: worker
            image: python:3.11
            command: [sh, -c, "sleep 12; touch ready; sleep 300"]
            readinessProbe:
              exec: {{command: [test, -f, ready]}}
              periodSeconds: 1
"""


def _get(kind: str, name: str) -> dict[str, Any] | None:
    got = kubectl("-n", NAMESPACE, "get", kind, name, "-o", "json", kubeconfig=ADMIN, check=False)
    return json.loads(got.stdout) if got.returncode == 0 else None


def _condition(pod: dict[str, Any], kind: str) -> str | None:
    for c in pod.get("status", {}).get("conditions") or []:
        if c["type"] == kind:
            return str(c["status"])
    return None


def _watch(name: str, until: str, seconds: float) -> list[tuple[str, str | None, bool | None]]:
    """(phase, Ready, the container's ready) as seen every half second until Ready is UNTIL."""
    seen: list[tuple[str, str | None, bool | None]] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pod = _get("pod", name) or {}
        statuses = pod.get("status", {}).get("containerStatuses") or [{}]
        seen.append((pod.get("status", {}).get("phase", ""), _condition(pod, "Ready"),
                     statuses[0].get("ready")))  # fmt: skip
        if seen[-1][0] == "Running" and seen[-1][1] == until:
            break
        time.sleep(0.5)
    return seen


def _slice_readiness(service: str) -> dict[str, bool]:
    """pod name -> ready, from the EndpointSlices of SERVICE."""
    got = kubectl("-n", NAMESPACE, "get", "endpointslices", "-l",
                  f"kubernetes.io/service-name={service}", "-o", "json", kubeconfig=ADMIN)  # fmt: skip
    out = {}
    for item in json.loads(got.stdout)["items"]:
        for ep in item.get("endpoints") or []:
            ref = ep.get("targetRef") or {}
            out[ref.get("name", "")] = bool((ep.get("conditions") or {}).get("ready"))
    return out


def test_readiness_follows_the_probe_and_consumers_see_it(tier):
    n = f"prb-{uuid.uuid4().hex[:6]}"
    made = create(PODS.format(n=n))
    assert made.returncode == 0, made.stderr
    try:
        seen = _watch(f"{n}-late", "True", 90)
        running = [s for s in seen if s[0] == "Running"]
        # running first unready (readiness starts as Failure), then ready once the file is there
        assert running and running[0][1:] == ("False", False), seen
        assert running[-1][1:] == ("True", True), seen
        late = _get("pod", f"{n}-late")
        assert late is not None and _condition(late, "ContainersReady") == "True"
        # the probe ran where the container's files are: this machine has no such file
        assert not Path("/probe/ready").exists()
        cs = late["status"]["containerStatuses"][0]
        assert cs["imageID"] == "stand-in://python:3.11" and cs["started"] is True
        never = wait_for(
            f"{n}-never running",
            lambda: (
                (p := _get("pod", f"{n}-never")) and p["status"].get("phase") == "Running" and p
            ),
        )
        time.sleep(3)  # several failed probes later: still unready
        never = _get("pod", f"{n}-never") or never
        assert _condition(never, "Ready") == "False", never["status"]
        assert _condition(never, "ContainersReady") == "False"
        assert never["status"]["containerStatuses"][0]["ready"] is False
        # what a Service's consumers see: the endpoint-slice controller reads Ready
        slices = wait_for(
            f"{n} endpoint slices", lambda: (s := _slice_readiness(n)) and len(s) == 2 and s
        )
        assert slices == {f"{n}-late": True, f"{n}-never": False}, slices
    finally:
        kubectl("-n", NAMESPACE, "delete", "pod", "-l", f"app={n}", "--wait=false", check=False)
        kubectl("-n", NAMESPACE, "delete", "service", n, "--ignore-not-found", check=False)


def test_mpi_operator_waits_for_a_worker_whose_probe_has_not_passed(tier):
    built("mpi-operator")
    n = f"prbmpi-{uuid.uuid4().hex[:6]}"
    made = create(MPIJOB.format(n=n))
    assert made.returncode == 0, made.stderr
    worker = f"{n}-worker-0"
    try:
        wait_for(
            f"{worker} running",
            lambda: ((_get("pod", worker) or {}).get("status") or {}).get("phase") == "Running",
        )
        unready = 0
        while True:
            # the launcher is read before the worker: a launcher seen at t1 beside a worker
            # still unready at t2 > t1 was made before the worker was Ready (the other order
            # races the operator, which may make it between the two reads)
            launcher = _get("job", f"{n}-launcher")
            w = _get("pod", worker)
            if w is None or _condition(w, "Ready") == "True":
                break
            unready += 1
            # the operator makes its launcher only once every worker is Ready
            assert launcher is None, "launcher made before the worker was Ready"
            time.sleep(0.5)
        assert w is not None, "the worker went away"
        assert unready >= 5, "the worker was Ready before its probe could pass"
        wait_for(f"{n}-launcher", lambda: _get("job", f"{n}-launcher") is not None, 60)
    finally:
        kubectl("-n", NAMESPACE, "delete", "mpijob", n, "--wait=false", check=False)
