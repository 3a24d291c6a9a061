"""The node agent: registers a Node, renews its Lease, runs the pods bound to it as
local processes (pods.py) and serves the kubelet's log API (server.py).

    python3 -m nodeagent --server https://127.0.0.1:6443 --token-file F --ca F \\
        --node NAME --port 10250 --cert F --key F --logdir DIR
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from . import crilog, netns, pods, server
from .api import Api, ApiError
from .pods import PodRunner, now
from .pull import Puller
from .sandbox import Sandbox

HEARTBEAT = 10.0
#: seconds a pod status report is retried while the API server cannot be reached
REPORT_RETRY = 120.0


def node_object(name: str, port: int) -> dict[str, Any]:
    resources = {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
            },
        },
        "status": node_status(port, resources),
    }


def node_status(port: int, resources: dict[str, str] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "the jupyter-ddl node agent is posting ready status",
                "lastHeartbeatTime": now(),
                "lastTransitionTime": now(),
            }
        ],
        "nodeInfo": {
            "kubeletVersion": "nodeagent",
            "operatingSystem": "linux",
            "architecture": "amd64",
            "containerRuntimeVersion": "process://",
            "kernelVersion": "",
            "osImage": "",
            "kubeProxyVersion": "",
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
        },
    }
    if resources:
        status["capacity"] = status["allocatable"] = resources
    return status


class Agent:
    def __init__(
        self, api: Api, node: str, port: int, logdir: Path, sandbox: Sandbox | None = None
    ) -> None:
        self.api, self.node, self.port, self.logdir = api, node, port, logdir
        self.sandbox = sandbox
        self.runners: dict[str, PodRunner] = {}  # pod uid -> runner
        self.deleting: set[str] = set()
        self.stop = threading.Event()

    def lookup(self, ns: str, name: str) -> PodRunner | None:
        for r in list(self.runners.values()):
            m = r.pod["metadata"]
            if m["namespace"] == ns and m["name"] == name:
                return r
        return None

    def register(self) -> None:
        try:
            self.api.call("POST", "/api/v1/nodes", node_object(self.node, self.port))
        except ApiError as e:
            if e.code != 409:
                raise
        # admission tainted the new Node not-ready; the node lifecycle controller that
        # would lift the taint does not run here, and this node is ready
        self.api.merge_patch(f"/api/v1/nodes/{self.node}", {"spec": {"taints": None}})
        self.heartbeat()

    def heartbeat(self) -> None:
        self.api.merge_patch(
            f"/api/v1/nodes/{self.node}/status", {"status": node_status(self.port)}
        )
        path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{self.node}"
        renew = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        spec = {"holderIdentity": self.node, "leaseDurationSeconds": 40, "renewTime": renew}
        try:
            self.api.merge_patch(path, {"spec": spec})
        except ApiError as e:
            if e.code != 404:
                raise
            self.api.call(
                "POST",
                "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": self.node, "namespace": "kube-node-lease"},
                    "spec": spec,
                },
            )

    def reporter(self, pod: dict[str, Any]):  # type: ignore[no-untyped-def]
        m = pod["metadata"]
        path = f"/api/v1/namespaces/{m['namespace']}/pods/{m['name']}/status"

        def report(status: dict[str, Any]) -> None:
            # an API server away or refusing (restarting) is waited for, as the kubelet's
            # status manager retries: a pod's last status must not be lost
            deadline = time.monotonic() + REPORT_RETRY
            while True:
                try:
                    self.api.merge_patch(path, {"metadata": {"uid": m["uid"]}, "status": status})
                    return
                except ApiError as e:
                    if e.code in (404, 409):  # gone, or replaced by a pod of the same name
                        return
                    # anything else is retried too: a restarted API server answers 403
                    # until its RBAC caches have synced
                    if time.monotonic() > deadline or self.stop.is_set():
                        print(f"nodeagent: status of {m['name']}: {e}", file=sys.stderr, flush=True)
                        return
                    time.sleep(0.5)
                except OSError as e:
                    if time.monotonic() > deadline or self.stop.is_set():
                        print(f"nodeagent: status of {m['name']}: {e}", file=sys.stderr, flush=True)
                        return
                    time.sleep(0.5)

        return report

    def sync(self) -> None:
        # every pod and Service: this node's pods to run, and the names its pods resolve
        everything = self.api.get("/api/v1/pods")["items"]
        pods = [p for p in everything if p["spec"].get("nodeName") == self.node]
        if self.sandbox is not None and (self.runners or pods):
            svcs = self.api.get("/api/v1/services")["items"]
            self.sandbox.view = (everything, svcs)
            for r in list(self.runners.values()):
                r.refresh_hosts(everything, svcs)
        seen = set()
        for pod in pods:
            uid = pod["metadata"]["uid"]
            seen.add(uid)
            if uid not in self.runners and not pod["metadata"].get("deletionTimestamp"):
                phase = (pod.get("status") or {}).get("phase")
                if phase in ("Succeeded", "Failed"):
                    continue
                r = PodRunner(pod, self.logdir, self.reporter(pod), self.sandbox)
                self.runners[uid] = r
                r.start()
            elif pod["metadata"].get("deletionTimestamp") and uid not in self.deleting:
                self.deleting.add(uid)
                grace = float(pod["metadata"].get("deletionGracePeriodSeconds") or 0)
                threading.Thread(target=self._delete, args=(pod, grace), daemon=True).start()
        for uid in set(self.runners) - seen:
            r = self.runners.pop(uid)
            threading.Thread(target=r.stop, args=(0.0,), daemon=True).start()

    def _delete(self, pod: dict[str, Any], grace: float) -> None:
        """Graceful deletion: stop the containers, then remove the pod for good."""
        m = pod["metadata"]
        r = self.runners.get(m["uid"])
        if r is not None:
            r.stop(grace)
        try:
            self.api.call(
                "DELETE",
                f"/api/v1/namespaces/{m['namespace']}/pods/{m['name']}",
                {
                    "kind": "DeleteOptions",
                    "apiVersion": "v1",
                    "gracePeriodSeconds": 0,
                    "preconditions": {"uid": m["uid"]},
                },
            )
        except ApiError as e:
            if e.code not in (404, 409):
                print(f"nodeagent: deleting {m['name']}: {e}", file=sys.stderr, flush=True)
        self.runners.pop(m["uid"], None)
        self.deleting.discard(m["uid"])

    def run(self) -> None:
        self.register()
        last = time.monotonic()
        while not self.stop.is_set():
            try:
                self.sync()
                if time.monotonic() - last >= HEARTBEAT:
                    self.heartbeat()
                    last = time.monotonic()
            except (ApiError, OSError) as e:
                print(f"nodeagent: {e}", file=sys.stderr, flush=True)
            self.stop.wait(1.0)
        stoppers = [threading.Thread(target=r.stop, args=(5.0,)) for r in self.runners.values()]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="nodeagent")
    p.add_argument("--server", required=True)
    p.add_argument("--token-file", required=True)
    p.add_argument("--ca", required=True)
    p.add_argument("--node", default="node-0")
    p.add_argument("--port", type=int, default=10250)
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--logdir", required=True)
    p.add_argument("--piddir", required=True)
    p.add_argument("--datadir", help="pods' volumes and hosts files (a sandbox per pod)")
    p.add_argument("--pod-cidr", default="10.244.0.0/24", help="pods' IPs, on bridge jddl0")
    p.add_argument("--no-network", action="store_true", help="pods share this machine's network")
    p.add_argument("--path-prefix", default="", help="put first on every container's PATH")
    p.add_argument(
        "--pythonpath", default="", help="every container's PYTHONPATH unless it sets one"
    )
    p.add_argument("--record", help="file listing mount points made on this machine")
    p.add_argument("--registries", help="file naming the registries whose images are pulled")
    p.add_argument("--images", help="pulled images: blobs and unpacked root filesystems")
    p.add_argument("--log-max-size", type=int, default=crilog.MAX_SIZE,
                   help="bytes at which a container's log file is rotated (containerLogMaxSize)")  # fmt: skip
    a = p.parse_args(argv)
    if not 1 <= a.port <= 65535:
        p.error(f"--port {a.port} is not a TCP port (1-65535)")
    if not 0 <= a.log_max_size <= 1 << 40:
        p.error(f"--log-max-size {a.log_max_size} is out of range (0: never rotate, up to 1 TiB)")
    crilog.MAX_SIZE = a.log_max_size
    pods.PIDDIR = Path(a.piddir)
    pods.PIDDIR.mkdir(parents=True, exist_ok=True)
    api = Api(a.server, Path(a.token_file).read_text().strip(), a.ca)
    sandbox = None
    network = None
    if a.datadir:
        if not a.no_network:
            try:
                network = netns.Network(a.pod_cidr)
                network.setup()
            except netns.NetError as e:
                p.error(f"pod network: {e}")
        sandbox = Sandbox(
            api,
            Path(a.datadir),
            network,
            a.path_prefix,
            a.pythonpath,
            Path(a.record) if a.record else None,
            Puller(Path(a.images), Path(a.registries)) if a.images and a.registries else None,
        )
    agent = Agent(api, a.node, a.port, Path(a.logdir), sandbox)
    server.serve("127.0.0.1", a.port, a.cert, a.key, agent.lookup)
    signal.signal(signal.SIGTERM, lambda *_: agent.stop.set())
    try:
        agent.run()
    finally:
        if network is not None:
            netns.teardown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
