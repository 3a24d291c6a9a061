"""Runs one pod as local processes: init containers in order, then every container;
restarts under the pod's restartPolicy with the kubelet's back-off (the first restart at
once, then 10 s doubling up to 5 min); reports the pod's status as the kubelet does.
An image on a registry the tier is told about is pulled first (pull.py: ErrImagePull,
ImagePullBackOff); the container's command runs on this machine, inside the pod's
sandbox (its network namespace, volumes and hosts file: sandbox.py) when the agent
gives it one. Its probes (probes.py) set its `started` and `ready`; a liveness or
startup failure ends it and the restart policy decides.
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

from . import crilog, envs, image, probes, volumes
from .backoff import Backoff
from .envs import ConfigError
from .pull import Pulled, PullFailed, backoff_message
from .sandbox import ENTER, Sandbox
from .statuses import image_id, now, pod_phase, pod_status, terminated, waiting

__all__ = ["PIDDIR", "PodRunner", "StartFailed", "now", "pod_phase"]

# where each container's process group is recorded while it runs (set by __main__)
PIDDIR: Path | None = None


class StartFailed(Exception):
    """The image cannot run the container's command: the runtime's words."""


class PodRunner:
    """One pod: a thread that runs its containers and reports through `report`."""

    def __init__(
        self,
        pod: dict[str, Any],
        logdir: Path,
        report: Callable[[dict[str, Any]], None],
        sandbox: Sandbox | None = None,
    ) -> None:
        self.pod = pod
        self.sandbox = sandbox
        self.pod_ip, self.netns = "127.0.0.1", None  # type: tuple[str, str | None]
        self.sources: dict[str, Path | str] = {}
        self.prepared = False
        self.uid = pod["metadata"]["uid"]
        self.logdir = logdir
        self.report = report
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        # (container, restart) -> its process and the threads copying its output to its log
        self.runs: dict[
            tuple[str, int], tuple[subprocess.Popen[bytes], list[threading.Thread]]
        ] = {}
        self.statuses: dict[str, dict[str, Any]] = {}
        self.init_statuses: dict[str, dict[str, Any]] = {}
        self.pull_failures: dict[str, int] = {}
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.started_at = now()
        self.thread = threading.Thread(
            target=self._run, daemon=True, name=f"pod-{pod['metadata']['name']}"
        )

    # -- the kubelet's file layout: <logdir>/<ns>_<pod>_<uid>/<container>/<restart>.log
    def _workdir(self, container: str) -> Path:
        (d := self.log_path(container, 0).parent / "workdir").mkdir(parents=True, exist_ok=True)
        return d

    def log_path(self, container: str, restart: int) -> Path:
        m = self.pod["metadata"]
        return (
            self.logdir / f"{m['namespace']}_{m['name']}_{self.uid}" / container / f"{restart}.log"
        )

    def running(self, container: str, restart: int) -> bool:
        """Whether run ``restart`` of ``container`` may still add to its log: its process
        runs, or its output is still on its way from the pipes into the file (a log
        follow that stopped at the exit lost the traceback the process wrote last)."""
        run = self.runs.get((container, restart))
        if run is None:
            return False
        p, pumps = run
        if p.poll() is None:
            return True
        for t in pumps:  # they end at the pipes' end; a grandchild may hold one open
            t.join(timeout=2.0)
        return False

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

    def refresh_hosts(self, pods: list[dict[str, Any]], svcs: list[dict[str, Any]]) -> None:
        if self.sandbox is not None and self.prepared and not self.stopping.is_set():
            try:
                self.sandbox.refresh_hosts(self.pod, self.pod_ip, pods, svcs)
            except OSError:
                pass  # the pod ended while its file was rewritten: nothing reads it now

    # -- running -----------------------------------------------------------------
    def _fetch(self) -> envs.Fetch:
        if self.sandbox is None:
            return lambda kind, name: None
        return self.sandbox.fetcher(self.pod["metadata"]["namespace"])

    def _exec(
        self, c: dict[str, Any], restart: int, pulled: Pulled | None = None
    ) -> tuple[subprocess.Popen[bytes], dict[str, str], str | None]:
        """The container's process, its environment and (without a sandbox) its cwd."""
        # the image's Env under the container's own, as the runtime merges them
        own = envs.environment(self.pod, c, self.pod_ip, self._fetch())
        defined = {**image.image_env(c.get("image") or ""), **(pulled.env if pulled else {}), **own}
        argv = envs.command_line(c, defined)
        if not argv:
            raise OSError("the container names no command (images are not run here)")
        refused = image.start_error(c.get("image") or "", argv)
        if refused:
            raise StartFailed(refused)
        # no workingDir (the stand-in has no image WORKDIR): the pod's own, not the agent's
        cwd = c.get("workingDir") or (pulled and pulled.workdir) or str(self._workdir(c["name"]))
        run_cwd: str | None = cwd
        if self.sandbox is None:
            base = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": os.environ.get("HOME", "/root"),
                "HOSTNAME": self.pod["spec"].get("hostname") or self.pod["metadata"]["name"],
            }
        else:
            base = self.sandbox.base_env(self.pod)
            vols = {v["name"]: v for v in self.pod["spec"].get("volumes") or []}
            mounts = volumes.plan_mounts(c, vols, self.sources, {**base, **defined})
            argv = self.sandbox.wrap(
                self.pod,
                self.netns,
                argv,
                mounts,
                cwd,
                f"{c['name']}-{restart}",
                {**base, **defined},
                c,
                pulled,
            )
            cwd = None
        writer = crilog.Writer(self.log_path(c["name"], restart))
        p = subprocess.Popen(
            argv,
            env={**base, **defined},
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        pumps = [
            threading.Thread(target=writer.pump, args=(stream, src), daemon=True)
            for stream, src in (("stdout", p.stdout), ("stderr", p.stderr))
        ]
        for t in pumps:
            t.start()
        self.procs[c["name"]] = p
        self.runs[(c["name"], restart)] = (p, pumps)
        if PIDDIR is not None:
            # `scripts/cluster down` stops what is listed here even if the agent died first
            (PIDDIR / str(p.pid)).write_text(self.uid)
        return p, {**base, **defined}, run_cwd

    def _run(self) -> None:
        spec = self.pod["spec"]
        for c in spec.get("initContainers") or []:
            self.init_statuses[c["name"]] = waiting(
                c["name"], "PodInitializing", c.get("image") or ""
            )
        # the kubelet's default waiting reason: PodInitializing while a pod has init
        # containers to run, ContainerCreating otherwise
        first = "PodInitializing" if spec.get("initContainers") else "ContainerCreating"
        for c in spec["containers"]:
            self.statuses[c["name"]] = waiting(c["name"], first, c.get("image") or "")
        self._publish()
        try:
            if not self._prepare():
                return
            self._containers()
        finally:
            if self.sandbox is not None:
                self.prepared = False
                self.sandbox.release(self.pod)

    def _prepare(self) -> bool:
        """The sandbox: retried, as the kubelet retries a mount, until it can be made."""
        while self.sandbox is not None and not self.stopping.is_set():
            try:
                self.netns, self.pod_ip = self.sandbox.attach(self.pod)
                self.sources = self.sandbox.write_volumes(self.pod, self.pod_ip)
                self.sandbox.refresh_hosts(self.pod, self.pod_ip, *self.sandbox.view)
                self.prepared = True
                self._publish()
                return True
            except (ConfigError, OSError) as e:
                self._creating(f"MountVolume.SetUp failed: {e}")
            self.stopping.wait(2.0)
        return not self.stopping.is_set()

    def _creating(self, message: str) -> None:
        with self.lock:
            for table in (self.init_statuses, self.statuses):
                for name, st in table.items():
                    reason = st["state"].get("waiting", {}).get("reason", "ContainerCreating")
                    table[name] = {
                        **st,
                        "state": {"waiting": {"reason": reason, "message": message}},
                    }
        self._publish()

    def _containers(self) -> None:
        spec = self.pod["spec"]
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
        restart, backoff = 0, Backoff()
        while not self.stopping.is_set():
            code = self._once(c, table, restart)
            if code is None:
                continue
            if code == 0 or not retry:
                return code
            restart += 1
            self._backoff(c["name"], table, backoff.wait())
        return -1

    def _run_main(self, c: dict[str, Any]) -> None:
        policy = self.pod["spec"].get("restartPolicy", "Always")
        restart, backoff = 0, Backoff()
        while not self.stopping.is_set():
            code = self._once(c, self.statuses, restart)
            if code is None:
                continue
            if self.stopping.is_set() or policy == "Never" or (policy == "OnFailure" and code == 0):
                return
            restart += 1
            self._backoff(c["name"], self.statuses, backoff.wait())

    def _backoff(self, name: str, table: dict[str, dict[str, Any]], seconds: float) -> None:
        if seconds <= 0:  # restarted at once: no CrashLoopBackOff in between
            return
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

    def _once(
        self, c: dict[str, Any], table: dict[str, dict[str, Any]], restart: int
    ) -> int | None:
        """One run of the container: its exit code, or None when it could not be made
        yet (a missing ConfigMap or Secret key: retried, as the kubelet does)."""
        name = c["name"]
        cid = f"process://{self.uid}-{name}-{restart}"
        try:
            pulled = self.sandbox.pull(c, self.pod) if self.sandbox is not None else None
        except PullFailed as e:
            self._pull_failed(c, table, e)
            return None
        try:
            p, env, cwd = self._exec(c, restart, pulled)
        except StartFailed as e:
            # as containerd reports it: a run that ended at once, exit code 128
            self._ended(table, name, terminated(128, "StartError", now(), cid, str(e)), restart)
            return 128
        except ConfigError as e:
            self._waiting(table, name, "CreateContainerConfigError", str(e))
            self.stopping.wait(2.0)
            return None
        except OSError as e:
            self._waiting(table, name, "RunContainerError", str(e), restartCount=restart)
            return 128
        started = now()
        # init containers are not probed (only restartable ones are, on a kubelet)
        prober = probes.Prober(
            self.pod, c if table is self.statuses else {"name": name}, self.pod_ip, env, cwd,
            p.pid if self.sandbox is not None else None,
            lambda: self._probed(table, name, cid, prober), lambda why, grace: probes.end(p, grace),
            lambda: probes.past(p.pid, str(ENTER)) if self.sandbox is not None else True,
        )  # fmt: skip
        with self.lock:
            # a restarted container's lastState is how the one before it ended
            if "terminated" in table[name]["state"]:
                table[name] = {**table[name], "lastState": table[name]["state"]}
            table[name] = {
                **table[name],
                "restartCount": restart,
                "containerID": cid,
                "imageID": image_id(c.get("image") or "", pulled.repo_digest if pulled else None),
                "ready": prober.ready,
                "started": prober.started,
                "state": {"running": {"startedAt": started}},
            }
        self._publish()
        prober.start()
        code = p.wait()
        prober.stop()
        if PIDDIR is not None:
            (PIDDIR / str(p.pid)).unlink(missing_ok=True)
        # a signal death reads as the runtime reports it: 128 + the signal
        code = 128 - code if code < 0 else code
        reason = "Completed" if code == 0 else "Error"
        self._ended(table, name, terminated(code, reason, started, cid), restart)
        return code

    def _waiting(
        self, table: dict[str, dict[str, Any]], name: str, reason: str, message: str, **more: Any
    ) -> None:
        with self.lock:
            state = {"waiting": {"reason": reason, "message": message}}
            table[name] = {**table[name], **more, "state": state}
        self._publish()

    def _probed(
        self, table: dict[str, dict[str, Any]], name: str, cid: str, prober: probes.Prober
    ) -> None:
        """A probe changed the running container's `started` or `ready`."""
        with self.lock:
            st = table[name]
            if st.get("containerID") != cid or "running" not in st["state"]:
                return
            table[name] = {**st, "ready": prober.ready, "started": prober.started}
        self._publish()

    def _pull_failed(
        self, c: dict[str, Any], table: dict[str, dict[str, Any]], e: PullFailed
    ) -> None:
        """ErrImagePull with the registry's words, then ImagePullBackOff while the
        kubelet's image back-off runs (10 s doubling to 5 min)."""
        name = c["name"]
        n = self.pull_failures[name] = self.pull_failures.get(name, 0) + 1
        for reason, message, pause in (
            (e.reason, e.message, 2.0),
            ("ImagePullBackOff", backoff_message(c.get("image") or "", e), min(10.0 * 2 ** (n - 1), 300.0)),
        ):  # fmt: skip
            self._waiting(table, name, reason, message)
            if self.stopping.wait(pause):
                return

    def _ended(
        self, table: dict[str, dict[str, Any]], name: str, term: dict[str, Any], restart: int
    ) -> None:
        with self.lock:
            table[name] = {
                **table[name],
                "restartCount": restart,
                "containerID": term["containerID"],
                "ready": False,
                "started": False,
                "state": {"terminated": term},
            }
        self._publish()

    # -- status ------------------------------------------------------------------
    def _publish(self, failed: bool = False) -> None:
        with self.lock:
            mains = [self.statuses[k] for k in sorted(self.statuses)]
            inits = [
                self.init_statuses[c["name"]] for c in self.pod["spec"].get("initContainers") or []
            ]
        policy = self.pod["spec"].get("restartPolicy", "Always")
        status = pod_status(policy, mains, inits, failed, self.started_at)
        # the IP once the pod's network namespace exists, as the kubelet reports it
        if self.sandbox is None or self.prepared:
            status["podIP"], status["podIPs"] = self.pod_ip, [{"ip": self.pod_ip}]
        self.report(status)
