"""A test-side scheduler and kubelet: places each pod on a node and runs its main
container as a LOCAL PROCESS (``container``), reporting status as the kubelet does
(``podstatus``: statuses sorted by container name, a new container ID per restart,
``lastState``; in-place restarts under OnFailure/Always).

Also what a cluster does before a container starts: ``Scenario`` knobs (Unschedulable,
image pulls, OOM kills), Volcano gang scheduling (a pod naming ``schedulerName:
volcano`` waits while its PodGroup is absent or Pending), the attach/detach controller's
Multi-Attach refusal for a ReadWriteOnce PVC used from two nodes, scheduler-plugins'
coscheduling (a pod labelled with its PodGroup waits until ``minMember`` pods of the
group exist), and sidecars that a
mutating webhook added (recorded in ``sidecar.istio.io/status``): those are simulated,
running from the pod's start and never exiting, as Istio's classic ``istio-proxy``
does, so a pod with one never reaches Succeeded or Failed (operator-contract.md §8).
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from . import container as C
from . import podstatus as P
from .gc import sweep
from .scenario import Scenario, StartFailed
from .scheduling import Scheduling, main_container, sidecar_names
from .store import Store, now_iso

PODS = "core/v1/pods"


class Kubelet(Scheduling):
    def __init__(self, store: Store, scenario: Scenario, workdir: Path) -> None:
        self.store, self.scenario, self.workdir = store, scenario, workdir
        self.procs: dict[tuple[str, str], subprocess.Popen[bytes]] = {}
        self.started: set[str] = set()  # pod uids: a pod made again under its name is new
        self._told: set[tuple[str, str, str]] = set()  # (ns, object, reason) evented once
        self._reaping: set[tuple[str, str]] = set()  # pods being stopped in their grace
        self._rr = itertools.count()
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
                if key not in live:  # pod removed outright: kill its process
                    self._kill(key)
            for p in pods:
                key = (p["metadata"]["namespace"], p["metadata"]["name"])
                if p["metadata"].get("deletionTimestamp"):
                    self._reap(key, float(p["metadata"].get("deletionGracePeriodSeconds") or 0))
                elif (
                    p["metadata"]["uid"] not in self.started
                    and (p.get("status") or {}).get("phase", "Pending") == "Pending"
                ):
                    self._admit(p)
            self._volcano()
            sweep(self.store)
            self.store.wait(0.2)

    def _reap(self, key: tuple[str, str], grace: float) -> None:
        """A deleted pod: stop its containers (SIGTERM, then SIGKILL once its grace
        period is over), then let it go."""
        if key in self._reaping:
            return
        if key not in self.procs:
            self.store.delete(PODS, *key)
            return
        self._reaping.add(key)

        def stop_then_remove() -> None:
            self._kill(key, grace)
            self.store.delete(PODS, *key)
            self._reaping.discard(key)

        threading.Thread(target=stop_then_remove, daemon=True).start()

    def _admit(self, pod: dict[str, Any]) -> None:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        main = main_container(pod)
        unsched = self.scenario.match(name, self.scenario.unschedulable)
        if unsched:
            msg = self.scenario.unschedulable[unsched]
            self._set_status(ns, name, P.unschedulable(msg))
            self._event(ns, "Pod", name, "FailedScheduling", msg)
            self.started.add(pod["metadata"]["uid"])
            return
        if not self._gang_ready(ns, pod) or not self._place(ns, pod):
            return  # tried again next round
        if self.scenario.match(name, self.scenario.image_pull):
            image = main.get("image")
            msg = f'Back-off pulling image "{image}"'
            self._set_status(
                ns, name, P.pod("Pending", [P.waiting(main["name"], "ImagePullBackOff", msg)])
            )
            self._event(ns, "Pod", name, "Failed", f'Failed to pull image "{image}": not found')
            self.started.add(pod["metadata"]["uid"])
            return
        if not self._init_done(ns, pod):
            return  # tried again next round
        self.started.add(pod["metadata"]["uid"])
        # the image pull: the container waits in ContainerCreating meanwhile
        self._set_status(ns, name, P.pod("Pending", [P.waiting(main["name"], "ContainerCreating")]))
        image = main.get("image", "")
        record_event(self.store, ns, "Pod", name, "Pulling", f'Pulling image "{image}"', "Normal")
        threading.Thread(target=self._run_pod, args=(self.store.get(PODS, ns, name) or pod,),
                         daemon=True).start()  # fmt: skip

    def _init_done(self, ns: str, pod: dict[str, Any]) -> bool:
        """Run the init containers, in order, before the main one (the kubelet does).
        One whose image cannot be pulled holds the pod in ``Init:ImagePullBackOff``,
        phase Pending, the main container ``PodInitializing``. training-operator's
        ``init-pytorch`` polls DNS for the master's Service: here it succeeds once the
        master's pod exists (the double has no DNS)."""
        inits = (pod.get("spec") or {}).get("initContainers") or []
        if not inits:
            return True
        name, main = pod["metadata"]["name"], main_container(pod)
        done: list[dict[str, Any]] = []
        for c in inits:
            image = c.get("image") or ""
            if self.scenario.match(image, self.scenario.unpullable_images):
                msg = f'Back-off pulling image "{image}"'
                statuses = [*done, P.waiting(c["name"], "ImagePullBackOff", msg)]
                statuses += [
                    P.waiting(x["name"], "PodInitializing") for x in inits[len(statuses) :]
                ]
                self._set_status(ns, name, {**P.pod("Pending", [P.waiting(main["name"], "PodInitializing")]),
                                            "initContainerStatuses": statuses})  # fmt: skip
                self._event(ns, "Pod", name, "Failed", f'Failed to pull image "{image}": not found')
                return False
            if c["name"] == "init-pytorch":
                found = re.search(r"nslookup (\S+);", " ".join(c.get("command") or []))
                if found is None or self.store.get(PODS, ns, found.group(1)) is None:
                    return False
            term = P.termination(0, f"containerd://{uuid.uuid4().hex}")
            done.append(P.terminated(c["name"], 0, term, None))
        self._set_status(ns, name, {"initContainerStatuses": done})
        return True

    # -- one pod -----------------------------------------------------------------
    def _run_pod(self, pod: dict[str, Any]) -> None:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        spec = pod["spec"]
        main = main_container(pod)
        time.sleep(self.scenario.pull_seconds)  # the pull, off the scheduler's thread
        image = main.get("image", "")
        record_event(
            self.store, ns, "Pod", name, "Pulled", f'Successfully pulled image "{image}"', "Normal"
        )
        sidecars = {s: f"containerd://{uuid.uuid4().hex}" for s in sidecar_names(pod)}
        for s, cid in sidecars.items():
            self.store.log_append(cid, f"{s}: Envoy proxy is ready")
        policy = spec.get("restartPolicy", "Always")
        root = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.workdir))
        mounts, read_only = C.volumes(self.store, ns, spec, main, root)
        restarts, last = 0, None
        while not self._stop.is_set():
            cid = f"containerd://{uuid.uuid4().hex}"
            side = [P.running(s, c) for s, c in sidecars.items()]
            try:
                proc = self._spawn(ns, pod, main, mounts, read_only, root)
            except StartFailed as e:  # the runtime could not exec the command: exit 128
                term = {**P.termination(128, cid, "StartError"), "message": str(e)}
                restarts, last, again = self._start_failed(
                    ns, name, main, policy, restarts, last, term, side
                )
                if again:
                    continue
                return
            if proc is None:
                return
            self.procs[(ns, name)] = proc
            self._set_status(ns, name, P.pod("Running", [P.running(main["name"], cid, restarts, last), *side],
                                             ready=True, started=True))  # fmt: skip
            reader = threading.Thread(target=self._pump, args=(proc, cid), daemon=True)
            reader.start()
            code = proc.wait()
            reader.join(5)
            self.store.log_close(cid)
            if self.store.get(PODS, ns, name) is None or self.procs.get((ns, name)) is not proc:
                return  # deleted while running
            oom = code in (137, -9) and self.scenario.match(name, self.scenario.oom)
            term = P.termination(code, cid, "OOMKilled" if oom else None)
            if policy == "Always" or (policy == "OnFailure" and term["exitCode"] != 0):
                # the count rises when the next container is created, not during the
                # back-off (kubelet_pods.go convertToAPIContainerStatuses takes it from
                # the latest container, the one that just exited): an operator's
                # backoffLimit of 1 is reached only once the container ran again
                self._set_status(
                    ns,
                    name,
                    P.pod("Running", [self._exited(main["name"], restarts, term, last), *side]),
                )
                restarts, last = restarts + 1, term
                time.sleep(self._backoff(restarts, name))
                now = self.store.get(PODS, ns, name)
                if now is None or now["metadata"].get("deletionTimestamp"):
                    return  # deleted while it waited: a pod being deleted starts nothing
                continue
            if sidecars:  # Istio's classic sidecar never exits: the pod runs on, unfinished
                self._set_status(
                    ns,
                    name,
                    P.pod("Running", [P.terminated(main["name"], restarts, term, last), *side]),
                )
                self.procs.pop((ns, name), None)
                return
            done: list[dict[str, Any]] = []
            phase = "Succeeded" if term["exitCode"] == 0 else "Failed"
            self._set_status(
                ns, name, P.pod(phase, [P.terminated(main["name"], restarts, term, last), *done])
            )
            self.procs.pop((ns, name), None)
            shutil.rmtree(root, ignore_errors=True)
            return

    def _spawn(self, ns: str, pod: dict[str, Any], c: dict[str, Any], mounts: dict[str, str],
               read_only: list[str], root: Path) -> subprocess.Popen[bytes] | None:  # fmt: skip
        declared = C.environment(self.store, ns, pod, c)  # what $(VAR) in argv may name
        argv = [C.rewrite(C.expand(a, declared), mounts)
                for a in (c.get("command") or []) + (c.get("args") or [])]  # fmt: skip
        sshd = not argv or os.path.basename(argv[0]) == "sshd"
        if sshd and self.scenario.match(c.get("image", ""), self.scenario.no_sshd_images):
            raise StartFailed(
                "failed to create containerd task: failed to create shim task: OCI runtime "
                "create failed: runc create failed: unable to start container process: exec: "
                '"/usr/sbin/sshd": stat /usr/sbin/sshd: no such file or directory: unknown'
            )
        if sshd:
            # an MPI host (the image's default sshd): mpirun starts every rank on this
            # machine, so the host only has to stay up
            argv = ["sleep", "3600"]
        env = {k: os.environ[k] for k in ("PATH", "HOME", "PYENV_ROOT", "LANG") if k in os.environ}
        env["HOSTNAME"] = pod["metadata"]["name"]
        env.update({k: C.rewrite(v, mounts) for k, v in declared.items()})
        argv = over_ssh(argv, [k for k in env if k not in ("PATH", "HOME", "PYENV_ROOT", "LANG",
                                                            "HOSTNAME")])  # fmt: skip
        cwd = C.rewrite(c.get("workingDir") or str(root), mounts)
        try:
            return C.spawn(argv, env, cwd, read_only)
        except OSError as e:
            self._event(ns, "Pod", pod["metadata"]["name"], "Failed",
                        f"Error: failed to start container: {e}")  # fmt: skip
            return None

    def _start_failed(self, ns: str, name: str, main: dict[str, Any], policy: str, restarts: int,
                      last: dict[str, Any] | None, term: dict[str, Any],
                      side: list[dict[str, Any]]) -> tuple[int, dict[str, Any] | None, bool]:  # fmt: skip
        """A start error is a failed run: restarted in place under Always/OnFailure
        (CrashLoopBackOff), the pod Failed under Never. (restarts, last, try again)."""
        if policy in ("Always", "OnFailure"):
            self._set_status(
                ns,
                name,
                P.pod("Running", [self._exited(main["name"], restarts, term, last), *side]),
            )
            time.sleep(self._backoff(restarts + 1, name))
            return restarts + 1, term, True
        self._set_status(
            ns, name, P.pod("Failed", [P.terminated(main["name"], restarts, term, last), *side])
        )
        return restarts, last, False

    @staticmethod
    def _exited(
        name: str, restarts: int, term: dict[str, Any], last: dict[str, Any] | None
    ) -> dict[str, Any]:
        """A container that exited and will run again: the kubelet restarts it at once
        after its first exit (no back-off is kept for it yet: kuberuntime_manager.go
        doBackOff), so only from the second on does it wait in CrashLoopBackOff."""
        return (
            P.terminated(name, restarts, term, last)
            if restarts == 0
            else P.crashloop(name, restarts, term)
        )

    def _backoff(self, restarts: int, pod: str) -> float:
        """Seconds before restart number ``restarts``: none before the first, unless
        the scenario makes the pod's restarts slow."""
        slow = self.scenario.match(pod, self.scenario.restart_after)
        if slow is not None:
            return self.scenario.restart_after[slow]
        return 0.05 if restarts <= 1 else self.scenario.restart_backoff

    def _pump(self, proc: subprocess.Popen[bytes], cid: str) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            self.store.log_append(cid, raw.decode(errors="replace").rstrip("\n"))

    def _kill(self, key: tuple[str, str], grace: float = 3.0) -> None:
        proc = self.procs.pop(key, None)
        if proc and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(grace)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    # -- status and events ------------------------------------------------------------
    def _set_status(self, ns: str, name: str, status: dict[str, Any]) -> None:
        def apply(obj: dict[str, Any]) -> None:
            obj["status"] = {**(obj.get("status") or {}), **status,
                             "podIP": "127.0.0.1", "hostIP": "127.0.0.1"}  # fmt: skip
            images = {c["name"]: c.get("image", "") for c in obj["spec"]["containers"]
                      + (obj["spec"].get("initContainers") or [])}  # fmt: skip
            for cs in (obj["status"].get("containerStatuses") or []) + (
                obj["status"].get("initContainerStatuses") or []
            ):  # required fields
                image = images.get(cs["name"], "")
                cs.setdefault("image", image)
                cs.setdefault(
                    "imageID", f"{image}@sha256:{'0' * 64}" if cs.get("containerID") else ""
                )

        self.store.mutate(PODS, ns, name, apply)

    def _event(self, ns: str, kind: str, name: str, reason: str, message: str) -> None:
        if (ns, name, reason + message) in self._told:
            return
        self._told.add((ns, name, reason + message))
        record_event(self.store, ns, kind, name, reason, message)


def record_event(store: Store, ns: str, kind: str, name: str, reason: str, message: str,
                 etype: str = "Warning") -> None:  # fmt: skip
    store.create("core/v1/events", {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{name}.{uuid.uuid4().hex[:10]}", "namespace": ns},
        "involvedObject": {"kind": kind, "name": name, "namespace": ns},
        "reason": reason, "message": message, "type": etype,
        "firstTimestamp": now_iso(), "lastTimestamp": now_iso(), "count": 1,
    })  # fmt: skip


#: mpirun options that take a value (``-x`` included), and those that take two
_MPIRUN_VALUE = {"-np", "-n", "-c", "--np", "--hostfile", "-hostfile", "--machinefile",
                 "-machinefile", "-bind-to", "--bind-to", "-map-by", "--map-by", "-x",
                 "-H", "--host", "-host", "-wdir", "--wdir", "--prefix"}  # fmt: skip
_MPIRUN_TWO = {"-mca", "--mca", "-gmca", "--gmca"}


def over_ssh(argv: list[str], container_env: list[str]) -> list[str]:
    """The launcher's ``mpirun`` as the double runs it: every rank starts here, a child
    of mpirun, so it would inherit the container's environment. On a cluster a rank
    starts on a worker through ssh, in a fresh login environment, and Open MPI
    forwards only ``OMPI_*`` and the variables ``-x`` names (Open MPI ``mpirun(1)``).
    So the program is started under ``env -u`` for every container variable that
    ``-x`` does not name."""
    at = next((i for i, a in enumerate(argv) if os.path.basename(a) == "mpirun"), None)
    if at is None:
        return argv
    named: set[str] = set()
    i = at + 1
    while i < len(argv) and argv[i].startswith("-"):
        opt = argv[i]
        if opt == "-x" and i + 1 < len(argv):
            named.add(argv[i + 1].split("=", 1)[0])
        i += 3 if opt in _MPIRUN_TWO else 2 if opt in _MPIRUN_VALUE else 1
    drop = [k for k in container_env if k not in named and not k.startswith("OMPI_")]
    unset = [a for k in drop for a in ("-u", k)]
    return argv[:i] + (["env", *unset] if unset else []) + argv[i:]
