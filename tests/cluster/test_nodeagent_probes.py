"""The node agent's probes without the tier: the kubelet's defaults and result counting,
exec, tcpSocket and httpGet handlers, `started`/`ready` in the container's status and the
pod's ContainersReady/Ready, a liveness failure that restarts the container, and the
container's imageID."""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cluster"))

from nodeagent import probes
from nodeagent.pods import PodRunner
from nodeagent.statuses import image_id


def _pod(name: str, script: str, policy: str = "Never", **probe_specs: dict) -> dict:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {
            "restartPolicy": policy,
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": "python:3.11",
                    "command": [sys.executable, "-c", script],
                    "ports": [{"name": "svc", "containerPort": 1}],
                    **probe_specs,
                }
            ],
        },
    }


def _condition(status: dict, kind: str) -> str:
    return next(c["status"] for c in status["conditions"] if c["type"] == kind)


@pytest.fixture
def running() -> Iterator[Callable[[dict, Path], tuple[PodRunner, list[dict]]]]:
    made: list[PodRunner] = []

    def start(pod: dict, logdir: Path) -> tuple[PodRunner, list[dict]]:
        seen: list[dict] = []
        r = PodRunner(pod, logdir, seen.append)
        made.append(r)
        r.start()
        return r, seen

    yield start
    for r in made:
        r.stop(1)


def _until(seen: list[dict], check: Callable[[dict], bool], seconds: float = 20) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for s in list(seen):
            if check(s):
                return s
        time.sleep(0.05)
    raise AssertionError(f"not within {seconds} s: {seen[-1] if seen else None}")


def test_settings_take_the_kubelets_defaults():
    assert probes.settings({}) == {
        "initialDelaySeconds": 0,
        "periodSeconds": 10,
        "timeoutSeconds": 1,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    got = probes.settings({"periodSeconds": 2, "failureThreshold": -4, "initialDelaySeconds": 5})
    assert got["periodSeconds"] == 2 and got["failureThreshold"] == 1
    assert got["initialDelaySeconds"] == 5


def test_a_result_changes_only_after_its_threshold_in_a_row():
    t = probes.Threshold(success=2, failure=3, initial=False)
    assert [t.feed(ok) for ok in (True, False, True)] == [False, False, False]
    assert t.result is False
    assert t.feed(True) is True and t.result is True  # two in a row
    assert [t.feed(ok) for ok in (False, False, None, True, False, False)] == [False] * 6
    assert t.feed(False) is True and t.result is False  # three in a row, Unknown not counted


def test_ports_by_number_or_by_the_containers_name():
    c = {"ports": [{"name": "http", "containerPort": 8080}]}
    assert probes.port_of(80, c) == 80 and probes.port_of("http", c) == 8080
    with pytest.raises(ValueError, match="not a port the container names"):
        probes.port_of("grpc", c)
    with pytest.raises(ValueError, match="not a TCP port"):
        probes.port_of(70000, c)


def test_http_and_tcp_handlers_count_as_the_kubelet_does():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            code = {"/ok": 200, "/moved": 302}.get(self.path, 503)
            agent = self.headers.get("User-Agent", "")
            self.send_response(code if agent.startswith("kube-probe/") else 418)
            self.send_header("Location", "http://elsewhere.invalid/")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    try:
        assert probes.run_http("127.0.0.1", port, {"path": "/ok"}, 1)[0] is True
        assert probes.run_http("127.0.0.1", port, {"path": "moved"}, 1)[0] is True
        ok, said = probes.run_http("127.0.0.1", port, {"path": "/down"}, 1)
        assert ok is False and said == "HTTP probe failed with statuscode: 503"
        assert probes.run_tcp("127.0.0.1", port, 1)[0] is True
    finally:
        srv.shutdown()
        srv.server_close()
    assert probes.run_tcp("127.0.0.1", port, 1)[0] is False
    ok, said = probes.run_exec(["sleep", "5"], {"PATH": "/usr/bin:/bin"}, None, None, 0.3)
    assert ok is False and "timed out" in said


def test_readiness_follows_an_exec_probe_as_the_file_appears(tmp_path, running):
    script = "import time, pathlib; time.sleep(2); pathlib.Path('ready').touch(); time.sleep(30)"
    probe = {"exec": {"command": ["test", "-f", "ready"]}, "periodSeconds": 1}
    r, seen = running(_pod("ready", script, readinessProbe=probe), tmp_path)
    main = lambda s: s["containerStatuses"][0]  # noqa: E731
    up = _until(seen, lambda s: "running" in main(s)["state"])
    # running but not ready: readiness starts as Failure; the probe has no file yet
    assert main(up)["ready"] is False and main(up)["started"] is True
    assert _condition(up, "Ready") == "False" and _condition(up, "ContainersReady") == "False"
    assert up["phase"] == "Running"
    done = _until(seen, lambda s: main(s)["ready"] is True)
    assert _condition(done, "Ready") == "True" and _condition(done, "ContainersReady") == "True"
    assert main(done)["imageID"] == "stand-in://python:3.11"


def test_a_failing_readiness_probe_keeps_the_pod_unready(tmp_path, running):
    probe = {"tcpSocket": {"port": "svc"}, "periodSeconds": 1, "failureThreshold": 1}
    r, seen = running(_pod("never", "import time; time.sleep(30)", readinessProbe=probe), tmp_path)
    time.sleep(3.5)
    assert seen and all(_condition(s, "Ready") == "False" for s in seen)
    assert seen[-1]["phase"] == "Running"


def test_a_startup_probe_holds_started_and_ready_until_it_succeeds(tmp_path, running):
    script = "import time, pathlib; time.sleep(2); pathlib.Path('up').touch(); time.sleep(30)"
    startup = {
        "exec": {"command": ["test", "-f", "up"]},
        "periodSeconds": 1,
        "failureThreshold": 30,
    }
    # a liveness probe that would fail must not run before the container has started
    live = {"exec": {"command": ["test", "-f", "up"]}, "periodSeconds": 1, "failureThreshold": 1}
    r, seen = running(_pod("start", script, startupProbe=startup, livenessProbe=live), tmp_path)
    main = lambda s: s["containerStatuses"][0]  # noqa: E731
    up = _until(seen, lambda s: "running" in main(s)["state"])
    assert main(up)["started"] is False and main(up)["ready"] is False
    done = _until(seen, lambda s: main(s)["started"] is True)
    assert main(done)["ready"] is True and main(done)["restartCount"] == 0
    assert all(main(s)["restartCount"] == 0 for s in seen)


def test_a_liveness_failure_restarts_the_container(tmp_path, running):
    live = {"exec": {"command": ["false"]}, "periodSeconds": 1, "failureThreshold": 2}
    script = "import time; time.sleep(60)"
    r, seen = running(_pod("live", script, "OnFailure", livenessProbe=live), tmp_path)
    main = lambda s: s["containerStatuses"][0]  # noqa: E731
    again = _until(seen, lambda s: main(s)["restartCount"] == 1 and "running" in main(s)["state"])
    last = main(again)["lastState"]["terminated"]
    # killed by TERM, as the runtime reports a signal death: 128 + 15
    assert last["exitCode"] == 143 and last["reason"] == "Error"


def test_image_ids_say_what_was_pulled_or_that_nothing_was():
    assert image_id("python:3.11", None) == "stand-in://python:3.11"
    digest = "h:5000/team/app@sha256:" + "a" * 64
    assert image_id("h:5000/team/app:v1", digest) == digest
    assert image_id("", None) == ""


def test_exec_waits_for_the_container_to_leave_its_wrapper(tmp_path):
    # a sandboxed exec probe runs only once the main process has exec'd its command:
    # while its command line still names the wrapper (enter.py), it is not probed
    marker = str(tmp_path / "enter.py")
    wrapper = subprocess.Popen(["sh", "-c", "sleep 30", marker])
    command = subprocess.Popen(["sleep", "30"])
    try:
        deadline = time.monotonic() + 5  # until the fork has exec'd `sleep`
        while not probes.past(command.pid, marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert probes.past(command.pid, marker) is True
        assert probes.past(wrapper.pid, marker) is False
    finally:
        for p in (wrapper, command):
            p.kill()
            p.wait()
    assert probes.past(command.pid, marker) is False  # gone
