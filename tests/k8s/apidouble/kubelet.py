"""A test-side kubelet: runs each scheduled pod's container as a LOCAL PROCESS.

ConfigMap/Secret volumes become directories, mount paths in the command, args and env
are rewritten to them, env (value, secretKeyRef, configMapKeyRef, fieldRef, envFrom) is
resolved like the real kubelet, stdout+stderr land in the store as the pod log, and the
container is restarted in place (new container ID, ``lastState``) under OnFailure/Always.
Scheduling is faked by ``Scenario`` knobs: Unschedulable, image pull failures.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .store import Store, now_iso

PODS = "core/v1/pods"


@dataclass
class Scenario:
    """What the fake cluster does to pods whose name contains a key."""

    unschedulable: dict[str, str] = field(default_factory=dict)  # pod part -> message
    image_pull: set[str] = field(default_factory=set)  # pod parts whose image never pulls
    oom: set[str] = field(default_factory=set)  # exit 137 reported as OOMKilled
    restart_backoff: float = 0.3

    def match(self, pod: str, keys: Any) -> Any:
        return next((k for k in keys if k in pod), None)


class Kubelet:
    def __init__(self, store: Store, scenario: Scenario, workdir: Path) -> None:
        self.store, self.scenario, self.workdir = store, scenario, workdir
        self.procs: dict[tuple[str, str], subprocess.Popen[bytes]] = {}
        self.started: set[tuple[str, str]] = set()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="kubelet", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()
        for key in list(self.procs):
            self._kill(key)
        self.thread.join(5)

    # -- loop ------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.is_set():
            pods, _ = self.store.list(PODS, None)
            live = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods}
            for key in list(self.procs):
                if key not in live:  # pod deleted: kill its process
                    self._kill(key)
            for p in pods:
                key = (p["metadata"]["namespace"], p["metadata"]["name"])
                if (
                    key not in self.started
                    and (p.get("status") or {}).get("phase", "Pending") == "Pending"
                ):
                    self._admit(p)
            self.store.wait(0.2)

    def _admit(self, pod: dict[str, Any]) -> None:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        c = pod["spec"]["containers"][0]["name"]
        unsched = self.scenario.match(name, self.scenario.unschedulable)
        if unsched:
            msg = self.scenario.unschedulable[unsched]
            self._set_status(ns, name, _pending(c, "Unschedulable", msg, scheduled=False))
            self._event(ns, name, "FailedScheduling", msg)
            self.started.add((ns, name))
            return
        if self.scenario.match(name, self.scenario.image_pull):
            image = pod["spec"]["containers"][0].get("image")
            msg = f'Back-off pulling image "{image}"'
            self._set_status(ns, name, _pending(c, "ImagePullBackOff", msg, scheduled=True))
            self._event(ns, name, "Failed", f'Failed to pull image "{image}": not found')
            self.started.add((ns, name))
            return
        self.started.add((ns, name))
        threading.Thread(target=self._run_pod, args=(pod,), daemon=True).start()

    # -- one pod -----------------------------------------------------------------
    def _run_pod(self, pod: dict[str, Any]) -> None:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        spec = pod["spec"]
        container = spec["containers"][0]
        policy = spec.get("restartPolicy", "Always")
        root = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.workdir))
        mounts = self._volumes(ns, spec, container, root)
        restarts, last = 0, None
        while not self._stop.is_set():
            cid = f"containerd://{uuid.uuid4().hex}"
            proc = self._spawn(ns, pod, container, mounts, root)
            if proc is None:
                return
            self.procs[(ns, name)] = proc
            self._set_status(ns, name, _running(container["name"], cid, restarts, last))
            reader = threading.Thread(target=self._pump, args=(proc, cid), daemon=True)
            reader.start()
            code = proc.wait()
            reader.join(5)
            self.store.log_close(cid)
            if self.store.get(PODS, ns, name) is None or self.procs.get((ns, name)) is not proc:
                return  # deleted while running
            reason = "Completed" if code == 0 else "Error"
            if code in (137, -9) and self.scenario.match(name, self.scenario.oom):
                reason = "OOMKilled"
            term = {"exitCode": code if code >= 0 else 128 - code, "reason": reason,
                    "containerID": cid, "startedAt": now_iso(), "finishedAt": now_iso()}  # fmt: skip
            if policy == "Always" or (policy == "OnFailure" and code != 0):
                restarts, last = restarts + 1, term
                self._set_status(ns, name, _crashloop(container["name"], restarts, term))
                time.sleep(self.scenario.restart_backoff)
                continue
            phase = "Succeeded" if code == 0 else "Failed"
            self._set_status(ns, name, _terminated(container["name"], phase, restarts, term, last))
            self.procs.pop((ns, name), None)
            shutil.rmtree(root, ignore_errors=True)
            return

    def _spawn(
        self, ns: str, pod: dict[str, Any], c: dict[str, Any], mounts: dict[str, str], root: Path
    ) -> subprocess.Popen[bytes] | None:
        argv = [_rewrite(a, mounts) for a in (c.get("command") or []) + (c.get("args") or [])]
        if not argv:  # an image default entrypoint (e.g. MPI workers' sshd): idle
            argv = ["sleep", "3600"]
        if argv[0] in ("python", "python3"):  # the "image's" interpreter is this one
            argv[0] = sys.executable
        env = {k: os.environ[k] for k in ("PATH", "HOME", "PYENV_ROOT", "LANG") if k in os.environ}
        env["HOSTNAME"] = pod["metadata"]["name"]
        env.update({k: _rewrite(v, mounts) for k, v in self._env(ns, pod, c).items()})
        cwd = _rewrite(c.get("workingDir") or str(root), mounts)
        try:
            return subprocess.Popen(
                argv,
                env=env,
                cwd=cwd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as e:
            self._event(
                ns, pod["metadata"]["name"], "Failed", f"Error: failed to start container: {e}"
            )
            return None

    def _pump(self, proc: subprocess.Popen[bytes], cid: str) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            self.store.log_append(cid, raw.decode(errors="replace").rstrip("\n"))

    def _kill(self, key: tuple[str, str]) -> None:
        proc = self.procs.pop(key, None)
        if proc and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(3)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    # -- env and volumes ----------------------------------------------------------------
    def _data(self, ns: str, kind: str, name: str) -> dict[str, str]:
        obj = self.store.get(f"core/v1/{kind}", ns, name) or {}
        out = (
            {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()}
            if kind == "secrets"
            else dict(obj.get("data") or {})
        )
        if kind == "configmaps":
            out.update(
                {
                    k: base64.b64decode(v).decode(errors="replace")
                    for k, v in (obj.get("binaryData") or {}).items()
                }
            )
        return out

    def _env(self, ns: str, pod: dict[str, Any], c: dict[str, Any]) -> dict[str, str]:
        env: dict[str, str] = {}
        for src in c.get("envFrom") or []:
            if src.get("secretRef"):
                env.update(self._data(ns, "secrets", src["secretRef"]["name"]))
            if src.get("configMapRef"):
                env.update(self._data(ns, "configmaps", src["configMapRef"]["name"]))
        for e in c.get("env") or []:
            vf = e.get("valueFrom") or {}
            if "value" in e:
                env[e["name"]] = str(e["value"])
            elif vf.get("secretKeyRef"):
                ref = vf["secretKeyRef"]
                env[e["name"]] = self._data(ns, "secrets", ref["name"]).get(ref["key"], "")
            elif vf.get("configMapKeyRef"):
                ref = vf["configMapKeyRef"]
                env[e["name"]] = self._data(ns, "configmaps", ref["name"]).get(ref["key"], "")
            elif vf.get("fieldRef"):
                from .store import field_lookup

                path = vf["fieldRef"]["fieldPath"].replace("['", ".").replace("']", "")
                env[e["name"]] = str(field_lookup(pod, path) or "")
        return env

    def _volumes(
        self, ns: str, spec: dict[str, Any], c: dict[str, Any], root: Path
    ) -> dict[str, str]:
        mounts: dict[str, str] = {}
        vols = {v["name"]: v for v in spec.get("volumes") or []}
        for m in c.get("volumeMounts") or []:
            v = vols.get(m["name"], {})
            target = root / "volumes" / m["name"]
            target.mkdir(parents=True, exist_ok=True)
            for kind, ref in (("configmaps", v.get("configMap")), ("secrets", v.get("secret"))):
                if not ref:
                    continue
                data = self._data(ns, kind, ref.get("name") or ref.get("secretName"))
                items = ref.get("items") or [{"key": k, "path": k} for k in data]
                for it in items:
                    f = target / it["path"]
                    f.parent.mkdir(parents=True, exist_ok=True)
                    f.write_text(data.get(it["key"], ""))
            mounts[m["mountPath"]] = str(target)
        return mounts

    # -- status and events ------------------------------------------------------------
    def _set_status(self, ns: str, name: str, status: dict[str, Any]) -> None:
        def apply(obj: dict[str, Any]) -> None:
            obj["status"] = {
                **(obj.get("status") or {}),
                **status,
                "podIP": "127.0.0.1",
                "hostIP": "127.0.0.1",
            }
            image = obj["spec"]["containers"][0].get("image", "")
            for cs in obj["status"].get("containerStatuses") or []:  # required fields
                cs.setdefault("image", image)
                cs.setdefault(
                    "imageID", f"{image}@sha256:{'0' * 64}" if cs.get("containerID") else ""
                )

        self.store.mutate(PODS, ns, name, apply)

    def _event(self, ns: str, pod: str, reason: str, message: str) -> None:
        self.store.create("core/v1/events", {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{pod}.{uuid.uuid4().hex[:10]}", "namespace": ns},
            "involvedObject": {"kind": "Pod", "name": pod, "namespace": ns},
            "reason": reason, "message": message, "type": "Warning",
            "firstTimestamp": now_iso(), "lastTimestamp": now_iso(), "count": 1,
        })  # fmt: skip


def _rewrite(text: str, mounts: dict[str, str]) -> str:
    for path in sorted(mounts, key=len, reverse=True):
        text = text.replace(path, mounts[path])
    return text


def _cond(scheduled: bool, ready: bool) -> list[dict[str, Any]]:
    out = [{"type": "PodScheduled", "status": "True" if scheduled else "False"}]
    out.append({"type": "Ready", "status": "True" if ready else "False"})
    return out


def _pending(c: str, reason: str, msg: str, scheduled: bool) -> dict[str, Any]:
    conds = _cond(scheduled, False)
    if not scheduled:
        conds[0].update(reason="Unschedulable", message=msg)
        return {"phase": "Pending", "conditions": conds}
    state = {"waiting": {"reason": reason, "message": msg}}
    return {"phase": "Pending", "conditions": conds,
            "containerStatuses": [{"name": c, "state": state, "ready": False, "restartCount": 0}]}  # fmt: skip


def _running(c: str, cid: str, restarts: int, last: dict[str, Any] | None) -> dict[str, Any]:
    cs = {"name": c, "containerID": cid, "ready": True, "restartCount": restarts, "started": True,
          "state": {"running": {"startedAt": now_iso()}}, "lastState": {"terminated": last} if last else {}}  # fmt: skip
    return {
        "phase": "Running",
        "conditions": _cond(True, True),
        "containerStatuses": [cs],
        "startTime": now_iso(),
    }


def _crashloop(c: str, restarts: int, term: dict[str, Any]) -> dict[str, Any]:
    cs = {"name": c, "ready": False, "restartCount": restarts, "containerID": term["containerID"],
          "state": {"waiting": {"reason": "CrashLoopBackOff", "message": f"back-off restarting failed container {c}"}},
          "lastState": {"terminated": term}}  # fmt: skip
    return {"phase": "Running", "conditions": _cond(True, False), "containerStatuses": [cs]}


def _terminated(
    c: str, phase: str, restarts: int, term: dict[str, Any], last: dict[str, Any] | None
) -> dict[str, Any]:
    cs = {"name": c, "ready": False, "restartCount": restarts, "containerID": term["containerID"],
          "state": {"terminated": term}, "lastState": {"terminated": last} if last else {}}  # fmt: skip
    return {"phase": phase, "conditions": _cond(True, False), "containerStatuses": [cs]}
