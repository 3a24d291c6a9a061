"""Runs one pod as local processes: init containers in order, then every container;
restarts under the pod's restartPolicy with the kubelet's doubling back-off (10 s up to
5 min); reports the pod's status as the kubelet does. Images are not pulled: a
container's command runs on this machine.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import crilog

BACKOFF_START, BACKOFF_MAX = 10.0, 300.0
# where each container's process group is recorded while it runs (set by __main__)
PIDDIR: Path | None = None


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def field_value(pod: dict[str, Any], path: str, pod_ip: str) -> str:
    """The downward API's fieldRef values the kubelet resolves."""
    meta = pod["metadata"]
    if path == "metadata.name":
        return meta["name"]
    if path == "metadata.namespace":
        return meta["namespace"]
    if path == "metadata.uid":
        return meta["uid"]
    if path in ("status.podIP", "status.hostIP"):
        return pod_ip
    if path == "spec.nodeName":
        return pod["spec"].get("nodeName", "")
    if path == "spec.serviceAccountName":
        return pod["spec"].get("serviceAccountName", "default")
    for prefix, key in (("metadata.labels['", "labels"), ("metadata.annotations['", "annotations")):
        if path.startswith(prefix) and path.endswith("']"):
            return (meta.get(key) or {}).get(path[len(prefix) : -2], "")
    return ""


def environment(pod: dict[str, Any], container: dict[str, Any], pod_ip: str) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root")}
    env["HOSTNAME"] = pod["spec"].get("hostname") or pod["metadata"]["name"]
    for e in container.get("env") or []:
        if "value" in e:
            env[e["name"]] = e["value"]
        elif (e.get("valueFrom") or {}).get("fieldRef"):
            env[e["name"]] = field_value(pod, e["valueFrom"]["fieldRef"]["fieldPath"], pod_ip)
    return env


class PodRunner:
    """One pod: a thread that runs its containers and reports through `report`."""

    def __init__(
        self, pod: dict[str, Any], logdir: Path, report: Callable[[dict[str, Any]], None]
    ) -> None:
        self.pod = pod
        self.uid = pod["metadata"]["uid"]
        self.logdir = logdir
        self.report = report
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.statuses: dict[str, dict[str, Any]] = {}
        self.init_statuses: dict[str, dict[str, Any]] = {}
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.started_at = now()
        self.thread = threading.Thread(
            target=self._run, daemon=True, name=f"pod-{pod['metadata']['name']}"
        )

    # -- the kubelet's file layout: <logdir>/<ns>_<pod>_<uid>/<container>/<restart>.log
    def log_path(self, container: str, restart: int) -> Path:
        m = self.pod["metadata"]
        return (
            self.logdir / f"{m['namespace']}_{m['name']}_{self.uid}" / container / f"{restart}.log"
        )

    def running(self, container: str) -> bool:
        p = self.procs.get(container)
        return p is not None and p.poll() is None

    def start(self) -> None:
        self.thread.start()

    def stop(self, grace: float) -> None:
        """TERM every process group, KILL after the grace period."""
        self.stopping.set()
        procs = list(self.procs.values())
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        deadline = time.time() + grace
        for p in procs:
            try:
                p.wait(max(0.0, deadline - time.time()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.thread.join(5)

    # -- running -----------------------------------------------------------------
    def _exec(self, c: dict[str, Any], restart: int) -> subprocess.Popen[bytes]:
        argv = list(c.get("command") or []) + list(c.get("args") or [])
        if not argv:
            raise OSError("the container names no command (images are not run here)")
        writer = crilog.Writer(self.log_path(c["name"], restart))
        p = subprocess.Popen(
            argv,
            env=environment(self.pod, c, "127.0.0.1"),
            cwd=c.get("workingDir") or None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        for stream, src in (("stdout", p.stdout), ("stderr", p.stderr)):
            threading.Thread(target=writer.pump, args=(stream, src), daemon=True).start()
        self.procs[c["name"]] = p
        if PIDDIR is not None:
            # `scripts/cluster down` stops what is listed here even if the agent died first
            (PIDDIR / str(p.pid)).write_text(self.uid)
        return p

    def _run(self) -> None:
        spec = self.pod["spec"]
        for c in spec.get("initContainers") or []:
            self.init_statuses[c["name"]] = waiting(c["name"], "PodInitializing")
        for c in spec["containers"]:
            self.statuses[c["name"]] = waiting(c["name"], "ContainerCreating")
        self._publish()
        for c in spec.get("initContainers") or []:
            code = self._run_to_end(
                c, self.init_statuses, spec.get("restartPolicy", "Always") != "Never"
            )
            if code != 0 or self.stopping.is_set():
                self._publish(failed=True)
                return
        threads = [
            threading.Thread(target=self._run_main, args=(c,), daemon=True)
            for c in spec["containers"]
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self._publish()

    def _run_to_end(self, c: dict[str, Any], table: dict[str, dict[str, Any]], retry: bool) -> int:
        """An init container: run until it succeeds (or once under Never)."""
        restart, backoff = 0, BACKOFF_START
        while not self.stopping.is_set():
            code = self._once(c, table, restart)
            if code == 0 or not retry:
                return code
            restart += 1
            self._backoff(c["name"], table, backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)
        return -1

    def _run_main(self, c: dict[str, Any]) -> None:
        policy = self.pod["spec"].get("restartPolicy", "Always")
        restart, backoff = 0, BACKOFF_START
        while not self.stopping.is_set():
            code = self._once(c, self.statuses, restart)
            if self.stopping.is_set() or policy == "Never" or (policy == "OnFailure" and code == 0):
                return
            restart += 1
            self._backoff(c["name"], self.statuses, backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)

    def _backoff(self, name: str, table: dict[str, dict[str, Any]], seconds: float) -> None:
        with self.lock:
            last = table[name]["state"]
            table[name] = {
                **table[name],
                "state": {
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": f"back-off {int(seconds)}s restarting failed container={name} pod={self.pod['metadata']['name']}_{self.pod['metadata']['namespace']}({self.uid})",
                    }
                },
                "lastState": last,
            }
        self._publish()
        self.stopping.wait(seconds)

    def _once(self, c: dict[str, Any], table: dict[str, dict[str, Any]], restart: int) -> int:
        name = c["name"]
        cid = f"process://{self.uid}-{name}-{restart}"
        try:
            p = self._exec(c, restart)
        except OSError as e:
            with self.lock:
                table[name] = {
                    **table[name],
                    "restartCount": restart,
                    "state": {"waiting": {"reason": "RunContainerError", "message": str(e)}},
                }
            self._publish()
            return 128
        started = now()
        with self.lock:
            table[name] = {
                **table[name],
                "restartCount": restart,
                "containerID": cid,
                "ready": True,
                "started": True,
                "state": {"running": {"startedAt": started}},
            }
        self._publish()
        code = p.wait()
        if PIDDIR is not None:
            (PIDDIR / str(p.pid)).unlink(missing_ok=True)
        # a signal death reads as the runtime reports it: 128 + the signal
        code = 128 - code if code < 0 else code
        with self.lock:
            table[name] = {
                **table[name],
                "ready": False,
                "started": False,
                "state": {
                    "terminated": {
                        "exitCode": code,
                        "reason": "Completed" if code == 0 else "Error",
                        "startedAt": started,
                        "finishedAt": now(),
                        "containerID": cid,
                    }
                },
            }
        self._publish()
        return code

    # -- status ------------------------------------------------------------------
    def _publish(self, failed: bool = False) -> None:
        with self.lock:
            mains = [self.statuses[k] for k in sorted(self.statuses)]
            inits = [
                self.init_statuses[c["name"]] for c in self.pod["spec"].get("initContainers") or []
            ]
        phase = pod_phase(self.pod["spec"].get("restartPolicy", "Always"), mains, failed)
        ready = all("running" in s["state"] for s in mains)
        status = {
            "phase": phase,
            "hostIP": "127.0.0.1",
            "podIP": "127.0.0.1",
            "podIPs": [{"ip": "127.0.0.1"}],
            "startTime": self.started_at,
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {
                    "type": "Initialized",
                    "status": "True"
                    if all(
                        "terminated" in s["state"] and s["state"]["terminated"]["exitCode"] == 0
                        for s in inits
                    )
                    else "False",
                },
                {"type": "ContainersReady", "status": str(ready)},
                {"type": "Ready", "status": str(ready)},
            ],
            "containerStatuses": mains,
        }
        if inits:
            status["initContainerStatuses"] = inits
        self.report(status)


def waiting(name: str, reason: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": "",
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        "started": False,
        "state": {"waiting": {"reason": reason}},
    }


def pod_phase(policy: str, mains: list[dict[str, Any]], init_failed: bool) -> str:
    """The pod phase from its containers' states, as the kubelet computes it."""
    if init_failed:
        return "Failed"
    states = [s["state"] for s in mains]
    if any("running" in s for s in states):
        return "Running"
    if states and all("terminated" in s for s in states):
        codes = [s["terminated"]["exitCode"] for s in states]
        if policy == "Never" or (policy == "OnFailure" and all(c == 0 for c in codes)):
            return "Succeeded" if all(c == 0 for c in codes) else "Failed"
        return "Running"
    if any(s.get("waiting", {}).get("reason") == "CrashLoopBackOff" for s in states):
        return "Running"
    return "Pending"
