"""A container's startup, readiness and liveness probes, run as the kubelet runs them
(kubernetes v1.36.3 `pkg/kubelet/prober`: worker.go, prober.go, prober_manager.go;
`pkg/probe/{exec,http,tcp}`; the defaults from `pkg/apis/core/v1/defaults.go`).

What was read there and is kept here:
- defaults: timeoutSeconds 1, periodSeconds 10, successThreshold 1, failureThreshold 3,
  initialDelaySeconds 0 (the API server fills them; a bare dict gets them here too);
- one worker per probe, ticking every periodSeconds from the container's start (the
  first tick at once); a tick before initialDelaySeconds does nothing;
- a result changes only after `successThreshold` (`failureThreshold`) results in a row;
- the starting values: readiness Failure, liveness Success, startup Unknown; while a
  startup probe has not succeeded, the container is not `started`, and readiness and
  liveness are not run; once it has, the startup probe stops;
- `ready` = started, running and the readiness result is Success (no readiness probe:
  ready once started); the pod's ContainersReady and Ready follow every container's;
- a liveness failure, or a startup probe that reaches its failure threshold, kills the
  container ("Container X failed liveness probe, will be restarted") and the restart
  policy decides the rest; the worker then holds until the next container;
- exec: the command, `$(VAR)` expanded against the container's own `env` values, runs in
  the container (here: `nsenter` into its mount, network and UTS namespaces, in its
  working directory, with its environment); exit 0 is Success, a timeout is Failure;
- httpGet: GET scheme://host:port/path, host the pod IP unless given, the probe's
  headers, `User-Agent: kube-probe/1.36` and `Accept: */*` unless given; 200-399 is
  Success (a redirect is not followed: the kubelet counts one it stops at as a
  success too); HTTPS does not verify the certificate;
- tcpSocket: a connection to host:port (the pod IP unless given) is Success;
- a port given by name is the container's port of that name. grpc is not run here:
  such a probe counts as Unknown (no change), and the agent says so once.
"""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from .envs import expand

KINDS = ("startupProbe", "readinessProbe", "livenessProbe")
DEFAULTS = {
    "initialDelaySeconds": 0,
    "periodSeconds": 10,
    "timeoutSeconds": 1,
    "successThreshold": 1,
    "failureThreshold": 3,
}
MAX_OUTPUT = 10 << 10  # bytes of a probe's output kept, as the kubelet keeps (10 KiB)
USER_AGENT = "kube-probe/1.36"

Result = bool | None  # Success, Failure, Unknown


def settings(probe: Mapping[str, Any]) -> dict[str, int]:
    """The probe's timing with the kubelet's defaults; a value out of range (the API
    server refuses those) is brought to the nearest allowed one."""
    out = {}
    for key, default in DEFAULTS.items():
        try:
            value = int(probe.get(key) or 0)
        except (TypeError, ValueError):
            value = 0
        least = 0 if key == "initialDelaySeconds" else 1
        out[key] = min(max(value, least), 1 << 20) if value else default
    return out


def port_of(port: Any, container: Mapping[str, Any]) -> int:
    """A probe's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int) or (isinstance(port, str) and port.isdigit()):
        number = int(port)
    else:
        named = [p for p in container.get("ports") or [] if p.get("name") == port]
        if not named:
            raise ValueError(f"the port {port!r} is not a port the container names")
        number = int(named[0]["containerPort"])
    if not 1 <= number <= 65535:
        raise ValueError(f"the port {number} is not a TCP port (1-65535)")
    return number


def end(p: subprocess.Popen[bytes], grace: float) -> None:
    """Kill a container's process group as the runtime does: TERM, KILL after GRACE."""
    try:
        os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + max(0.0, grace)
        while p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # it ended on its own meanwhile


def past(pid: int, marker: str) -> bool:
    """Whether PID has left the sandbox's wrapper (its command line no longer names
    MARKER, enter.py) and so runs the container's command in its namespaces."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            line = f.read()
    except OSError:
        return False
    return bool(line) and marker.encode() not in line


class Threshold:
    """The kubelet's result counting for one probe (worker.go's lastResult/resultRun)."""

    def __init__(self, success: int, failure: int, initial: Result) -> None:
        self.success, self.failure = success, failure
        self.result: Result = initial
        self.last: Result = None
        self.run = 0

    def feed(self, ok: Result) -> bool:
        """Count one result; True when the probe's result is (re)set by it."""
        if ok is None:
            return False
        self.run = self.run + 1 if ok == self.last else 1
        self.last = ok
        if self.run < (self.success if ok else self.failure):
            return False
        self.result = ok
        return True


def run_exec(
    argv: list[str], env: Mapping[str, str], cwd: str | None, pid: int | None, timeout: float
) -> tuple[Result, str]:
    """ARGV in the container whose main process is PID (None: on this machine, in CWD)."""
    shown = argv[0]
    if pid is not None:
        argv = [
            shutil.which("nsenter") or "nsenter",
            "-t",
            str(pid),
            "-m",
            "-n",
            "-u",
            "--wd",
            "--",
            *argv,
        ]
        cwd = None
    try:
        p = subprocess.Popen(
            argv,
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as e:
        return False, f"exec {argv[0]}: {e.strerror}"
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return False, f"command timed out after {timeout:g}s"
    text = out[:MAX_OUTPUT].decode(errors="replace")
    return p.returncode == 0, text or f"{shown}: exit code {p.returncode}"


def run_tcp(host: str, port: int, timeout: float) -> tuple[Result, str]:
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as e:
        return False, f"dial tcp {host}:{port}: {e.strerror or e}"
    return True, ""


def run_http(host: str, port: int, action: Mapping[str, Any], timeout: float) -> tuple[Result, str]:
    scheme = str(action.get("scheme") or "HTTP").upper()
    path = str(action.get("path") or "/")
    path = path if path.startswith("/") else "/" + path
    headers = {h["name"]: str(h.get("value", "")) for h in action.get("httpHeaders") or []}
    headers.setdefault("User-Agent", USER_AGENT)
    headers.setdefault("Accept", "*/*")
    headers = {k: v for k, v in headers.items() if not (k == "Accept" and v == "")}
    conn: http.client.HTTPConnection
    if scheme == "HTTPS":
        ctx = ssl._create_unverified_context()  # the kubelet skips verification too
        conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=ctx)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers)
        res = conn.getresponse()
        res.read(MAX_OUTPUT)
    except (OSError, http.client.HTTPException) as e:
        return False, f"Get {scheme.lower()}://{host}:{port}{path}: {e}"
    finally:
        conn.close()
    if 200 <= res.status < 400:
        return True, ""
    return False, f"HTTP probe failed with statuscode: {res.status}"


class Prober:
    """The probes of one run of one container. `changed` is called when `started` or
    `ready` changes; `kill(message, grace)` ends the container (liveness, startup)."""

    def __init__(
        self,
        pod: Mapping[str, Any],
        container: Mapping[str, Any],
        pod_ip: str,
        env: Mapping[str, str],
        cwd: str | None,
        pid: int | None,
        changed: Callable[[], None],
        kill: Callable[[str, float], None],
        entered: Callable[[], bool] = lambda: True,
    ) -> None:
        self.pod, self.container, self.pod_ip = pod, container, pod_ip
        self.env, self.cwd, self.pid = env, cwd, pid
        self.changed, self.kill, self.entered = changed, kill, entered
        self.probes = {k: container[k] for k in KINDS if container.get(k)}
        self.begun = time.monotonic()
        self.stopping = threading.Event()
        self.told: set[str] = set()
        self._started = "startupProbe" not in self.probes
        self._readiness: Result = "readinessProbe" not in self.probes
        self.threads = [
            threading.Thread(target=self._loop, args=(k,), daemon=True, name=f"probe-{k}")
            for k in self.probes
        ]

    @property
    def started(self) -> bool:
        return self._started

    @property
    def ready(self) -> bool:
        return self._started and self._readiness is True

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def stop(self) -> None:
        self.stopping.set()

    def check(self, probe: Mapping[str, Any], timeout: float) -> tuple[Result, str]:
        """One probe: its result (None: Unknown) and what it said."""
        try:
            if probe.get("exec"):
                if not self.entered():
                    return None, "the container is not running yet"
                static = {
                    e["name"]: str(e.get("value", ""))
                    for e in self.container.get("env") or []
                    if "valueFrom" not in e
                }
                argv = [expand(a, static) for a in probe["exec"].get("command") or []]
                if not argv:
                    return None, "the exec probe names no command"
                return run_exec(argv, self.env, self.cwd, self.pid, timeout)
            if probe.get("tcpSocket"):
                action = probe["tcpSocket"]
                port = port_of(action.get("port"), self.container)
                return run_tcp(action.get("host") or self.pod_ip, port, timeout)
            if probe.get("httpGet"):
                action = probe["httpGet"]
                port = port_of(action.get("port"), self.container)
                return run_http(action.get("host") or self.pod_ip, port, action, timeout)
        except ValueError as e:
            return None, str(e)
        return None, "no exec, httpGet or tcpSocket handler (grpc is not run by this agent)"

    def _loop(self, kind: str) -> None:
        probe = self.probes[kind]
        s = settings(probe)
        initial: Result = {"readinessProbe": False, "livenessProbe": True}.get(kind)
        counts = Threshold(s["successThreshold"], s["failureThreshold"], initial)
        said = False
        while not self.stopping.is_set():
            # startup runs until the container has started; the others only after
            due = self._started != (kind == "startupProbe")
            if due and time.monotonic() - self.begun >= s["initialDelaySeconds"]:
                ok, message = self.check(probe, float(s["timeoutSeconds"]))
                if ok is None and not said and "grpc" in message:
                    said = True
                    self._say(kind, message)
                committed = counts.feed(ok) and not self.stopping.is_set()
                if committed and self._commit(kind, counts.result, message):
                    return  # held until the next container, as the kubelet's worker
            if self.stopping.wait(s["periodSeconds"]):
                return

    def _commit(self, kind: str, ok: Result, message: str) -> bool:
        """Apply a probe's new result; True when the container is being killed."""
        name = self.container["name"]
        if kind == "readinessProbe":
            if not ok and (ok is not self._readiness or kind not in self.told):
                self._say(kind, message)  # each fall to unready, and the first failure
            if ok is not self._readiness:
                self._readiness = ok
                self.changed()
            return False
        if kind == "startupProbe" and ok:
            self._started = True
            self.changed()
            return True  # started: the startup probe is done with this container
        if ok:
            return False
        what = "startup" if kind == "startupProbe" else "liveness"
        self._say(kind, f"{message}; Container {name} failed {what} probe, will be restarted")
        grace = self.probes[kind].get("terminationGracePeriodSeconds")
        if grace is None:
            grace = self.pod.get("spec", {}).get("terminationGracePeriodSeconds", 30)
        self.kill(f"Container {name} failed {what} probe, will be restarted", float(grace))
        return True

    def _say(self, kind: str, message: str) -> None:
        self.told.add(kind)
        m = self.pod.get("metadata", {})
        word = kind[: -len("Probe")].capitalize()
        short = " ".join(message.split())[:300]
        print(
            f"nodeagent: {m.get('namespace')}/{m.get('name')} {self.container['name']}: "
            f"{word} probe failed: {short}",
            file=sys.stderr,
            flush=True,
        )
