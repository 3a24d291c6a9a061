"""One face over both Kubernetes tiers, so one scenario runs against the API double
(tests/k8s/apidouble, our reading of the operators) and against the real control plane
and operators (scripts/cluster), which referee it. A scenario takes the ``cluster``
fixture (conftest.py) and uses only what is here: a backend as the notebook user, the
objects as an admin sees them, and the few things a test switches on (a quota, a
validating webhook refusing pods, an API server restart that answers resumed watches
410).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jupyter_ddl.backends.kubernetes import KubernetesBackend
from jupyter_ddl.config import Config
from tests.cluster.tier import ADMIN, CLUSTER, KUBECONFIG, NAMESPACE, STATE, kubectl, run
from tests.cluster.webhook import RefusingWebhook
from tests.k8s.apidouble import NAMESPACE as DOUBLE_NAMESPACE
from tests.k8s.apidouble import ApiDouble

#: the label the training-operator puts on a job's pods (the double's operator too)
JOB_LABEL = "training.kubeflow.org/job-name"
#: containerLogMaxSize on both tiers (the kubelet's default is 10 MiB): small, so a
#: scenario sees its log rotate; conftest.py starts the real tier with it
LOG_MAX_SIZE = 64 * 1024
#: how long the double's API server is away when it restarts
API_DOWN_SECONDS = 3.0


class Tier:
    """What a scenario may ask of a tier; ``DoubleTier`` and ``RealTier`` answer."""

    name: str
    namespace: str
    kubeconfig: Path

    def __init__(self, tmp: Path) -> None:
        self._tmp = tmp
        self._backends: list[KubernetesBackend] = []

    def backend(self) -> KubernetesBackend:
        cfg = Config(backend="kubernetes", namespace=self.namespace)
        b = KubernetesBackend(cfg, kubeconfig=str(self.kubeconfig),
                              sa_dir=self._tmp / "no-sa", usage_every=0.5)  # fmt: skip
        self._backends.append(b)
        return b

    def objects(self, rid: str, selector: str = "") -> list[dict[str, Any]]:
        """``rid`` as ``group/version/plural`` (``core/v1/pods``) in the namespace."""
        raise NotImplementedError

    def job_pods(self, job: str) -> list[str]:
        return sorted(
            p["metadata"]["name"] for p in self.objects("core/v1/pods", f"{JOB_LABEL}={job}")
        )

    def quota(self, name: str, hard: dict[str, str]) -> None:
        raise NotImplementedError

    def refuse_pods(self, message: str, match: str) -> None:
        """A validating admission webhook that denies the creation of pods whose name
        contains ``match``, with ``message``."""
        raise NotImplementedError

    def profile_owner(self) -> None:
        """The notebook user holds what a Kubeflow profile grants its owner and no more
        (kubeflow-edit in its namespace: no PodGroups)."""
        raise NotImplementedError

    def restart_api(self) -> None:
        """The API server goes away and comes back: every open watch and log follow is
        cut, and a watch resumed from a resourceVersion older than the restart is
        answered 410 Gone."""
        raise NotImplementedError

    def rotated(self, job: str) -> int:
        """How many of the job's container logs were rotated at least once."""
        raise NotImplementedError

    def close(self) -> None:
        for b in self._backends:
            for job in b.list():
                b.delete(job.name)
            b.close()


class DoubleTier(Tier):
    name = "double"
    namespace = DOUBLE_NAMESPACE

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        self.double = ApiDouble().start()
        # the kubelet's first back-off is 10 s: long enough to be seen as a waiting
        # reason, as on the real tier (the double's 0.3 s is often over before a
        # watcher reads the pod)
        self.double.scenario.restart_backoff = 2.0
        self.double.store.log_max_bytes = LOG_MAX_SIZE
        self.kubeconfig = self.double.kubeconfig(tmp / "kubeconfig")

    def objects(self, rid: str, selector: str = "") -> list[dict[str, Any]]:
        return self.double.store.list(rid, self.namespace, selector or None)[0]

    def quota(self, name: str, hard: dict[str, str]) -> None:
        self.double.quota(name, hard)

    def refuse_pods(self, message: str, match: str) -> None:
        self.double.policy.refuse("pods", message, webhook=RefusingWebhook.NAME, match=match)

    def profile_owner(self) -> None:
        self.double.catalog.crds.append("PodGroup/v1beta1")
        self.double.kubeflow_edit()

    def restart_api(self) -> None:
        # down for a few seconds, as a restart is: requests made meanwhile wait, every
        # stream is cut, and the new server's history begins now (410 for older)
        self.double.state.delay = API_DOWN_SECONDS
        with self.double.store.cond:
            self.double.store.compact()
        self.double.state.drop_streams()
        time.sleep(API_DOWN_SECONDS)
        self.double.state.delay = 0.0

    def rotated(self, job: str) -> int:
        store = self.double.store
        cids = [cs.get("containerID") for p in self.objects("core/v1/pods")
                if p["metadata"]["name"].startswith(job)
                for cs in (p.get("status") or {}).get("containerStatuses") or []]  # fmt: skip
        return sum(store.log_buffer(c).rotated > 0 for c in cids if c)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.double.stop()


class RealTier(Tier):
    name = "real"
    namespace = NAMESPACE
    kubeconfig = KUBECONFIG

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        self._undo: list[Callable[[], object]] = []

    def objects(self, rid: str, selector: str = "") -> list[dict[str, Any]]:
        group, _, plural = rid.split("/")
        kind = plural if group == "core" else f"{plural}.{group}"
        args = ["-n", self.namespace, "get", kind, "-o", "json"]
        got = kubectl(*args, *(["-l", selector] if selector else []), kubeconfig=ADMIN)
        return list(json.loads(got.stdout)["items"])

    def _apply(self, manifest: dict[str, Any]) -> None:
        subprocess.run(["kubectl", "--kubeconfig", str(ADMIN), "apply", "-f", "-"],
                       input=json.dumps(manifest), text=True, capture_output=True,
                       check=True, timeout=60)  # fmt: skip
        kind, name = manifest["kind"].lower(), manifest["metadata"]["name"]
        ns = manifest["metadata"].get("namespace")
        where = ["-n", ns] if ns else []
        self._undo.append(lambda: kubectl(*where, "delete", kind, name, "--wait=false",
                                          kubeconfig=ADMIN, check=False))  # fmt: skip

    def quota(self, name: str, hard: dict[str, str]) -> None:
        # a quota counts what the namespace holds already: pods of earlier scenarios
        # still stopping would fill it before the scenario's job makes one (the double
        # starts each scenario empty)
        deadline, left = time.monotonic() + 120, ["?"]
        while left and time.monotonic() < deadline:
            got = kubectl("-n", self.namespace, "get", "pods", "-o", "json", kubeconfig=ADMIN)
            left = [p["metadata"]["name"] for p in json.loads(got.stdout)["items"]
                    if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]  # fmt: skip
            if left:
                time.sleep(0.5)
        assert not left, f"pods of earlier scenarios still in {self.namespace}: {left}"
        self._apply({"apiVersion": "v1", "kind": "ResourceQuota",
                     "metadata": {"name": name, "namespace": self.namespace},
                     "spec": {"hard": hard}})  # fmt: skip
        # the quota controller must have counted what is there: until it has, the
        # ResourceQuota admission plugin refuses every create it covers with "status
        # unknown for quota" (a window the double does not have)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = kubectl("-n", self.namespace, "get", "resourcequota", name, "-o", "json",
                          kubeconfig=ADMIN)  # fmt: skip
            if set(hard) <= set((json.loads(got.stdout).get("status") or {}).get("hard") or {}):
                return
            time.sleep(0.3)
        raise AssertionError(f"the quota controller never counted quota {name}")

    def refuse_pods(self, message: str, match: str) -> None:
        hook = RefusingWebhook(self._tmp, message, match)
        self._undo.append(hook.stop)
        self._apply(hook.configuration(self.namespace))

    def profile_owner(self) -> None:
        pass  # scripts/cluster binds the notebook user so, and serves both PodGroup CRDs

    def rotated(self, job: str) -> int:
        # the node agent's files: <logdir>/<ns>_<pod>_<uid>/<container>/<n>.log.<time>
        dirs = (STATE / "pods").glob(f"{self.namespace}_{job}-*")
        return sum(any(d.glob("*/*.log.*")) for d in dirs)

    def restart_api(self) -> None:
        got = run(str(CLUSTER), "restart-apiserver", check=False, timeout=180)
        assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-2000:]

    def close(self) -> None:
        try:
            super().close()
        finally:
            for undo in reversed(self._undo):
                undo()
