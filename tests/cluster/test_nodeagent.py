"""The node agent's parts that need no apiserver: CRI log records, a pod run as local
processes with the kubelet's statuses, and the kubelet log API over HTTPS."""

from __future__ import annotations

import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cluster"))

from nodeagent import crilog, server
from nodeagent.pods import PodRunner, pod_phase


def test_records_split_long_and_partial_lines():
    recs = crilog.records("stdout", b"a" * (crilog.MAX_RECORD + 5) + b"\n", t=0)
    assert [r.split(b" ")[2] for r in recs] == [b"P", b"F"]
    parsed = [crilog.parse(r) for r in recs]
    assert crilog.render(parsed, timestamps=False) == b"a" * (crilog.MAX_RECORD + 5) + b"\n"
    tail = crilog.records("stderr", b"no newline", t=0)
    assert tail[0].startswith(b"1970-01-01T00:00:00.000000000Z stderr P no newline")


def test_tail_keeps_a_line_with_its_partial_records():
    recs = [
        crilog.parse(r)
        for r in crilog.records("stdout", b"one\n" + b"x" * (crilog.MAX_RECORD + 1) + b"\n", t=0)
    ]
    assert crilog.render(crilog.tail(recs, 1), False) == b"x" * (crilog.MAX_RECORD + 1) + b"\n"
    assert crilog.tail(recs, 0) == []
    assert crilog.render(crilog.tail(recs, 5), False).startswith(b"one\n")


def pod(name: str, script: str, policy: str = "Never") -> dict:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {
            "restartPolicy": policy,
            "initContainers": [
                {"name": "init", "command": [sys.executable, "-c", "print('init done')"]}
            ],
            "containers": [
                {
                    "name": "main",
                    "command": [sys.executable, "-c", script],
                    "env": [
                        {"name": "GREETING", "value": "hello"},
                        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    ],
                }
            ],
        },
    }


def run_pod(tmp_path: Path, p: dict) -> tuple[PodRunner, list[dict]]:
    seen: list[dict] = []
    r = PodRunner(p, tmp_path, seen.append)
    r.start()
    r.thread.join(30)
    assert not r.thread.is_alive()
    return r, seen


def test_a_pod_runs_init_then_main_and_succeeds(tmp_path):
    script = "import os; print(os.environ['GREETING'], os.environ['POD'])"
    r, seen = run_pod(tmp_path, pod("ok", script))
    last = seen[-1]
    assert last["phase"] == "Succeeded"
    assert last["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    assert last["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    assert [s["phase"] for s in seen][0] == "Pending" and "Running" in [s["phase"] for s in seen]
    text = crilog.render(crilog.read_all(r.log_path("main", 0)), False)
    assert text == b"hello ok\n"


def test_a_failing_pod_under_never_fails_with_its_exit_code(tmp_path):
    _, seen = run_pod(
        tmp_path, pod("bad", "import sys; print('boom', file=sys.stderr); sys.exit(3)")
    )
    term = seen[-1]["containerStatuses"][0]["state"]["terminated"]
    assert seen[-1]["phase"] == "Failed" and term["exitCode"] == 3 and term["reason"] == "Error"


def test_pod_phase_follows_the_restart_policy():
    done = [{"state": {"terminated": {"exitCode": 1}}}]
    assert pod_phase("Never", done, False) == "Failed"
    assert pod_phase("OnFailure", done, False) == "Running"
    assert pod_phase("Always", [{"state": {"terminated": {"exitCode": 0}}}], False) == "Running"
    assert pod_phase("Never", [{"state": {"waiting": {}}}], False) == "Pending"


@pytest.fixture
def tls(tmp_path):
    key, crt = tmp_path / "k.pem", tmp_path / "c.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(crt),
        ],
        check=True,
        capture_output=True,
    )
    return str(crt), str(key)


def test_the_log_api_serves_tail_timestamps_and_limits(tmp_path, tls):
    r, _ = run_pod(tmp_path, pod("logs", "print('one'); print('two'); print('three')"))
    srv = server.serve(
        "127.0.0.1", 0, *tls, lambda ns, name: r if (ns, name) == ("ns", "logs") else None
    )
    port = srv.server_address[1]
    ctx = ssl._create_unverified_context()  # the apiserver does the same without a kubelet CA

    def get(q: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{port}/containerLogs/{q}", context=ctx, timeout=10
            ) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    try:
        assert get("ns/logs/main") == (200, b"one\ntwo\nthree\n")
        assert get("ns/logs/main?tailLines=1") == (200, b"three\n")
        assert get("ns/logs/main?limitBytes=5") == (200, b"one\nt")
        code, body = get("ns/logs/main?timestamps=true&tailLines=1")
        assert code == 200 and body.endswith(b"Z three\n") and body[:4].isdigit()
        assert get("ns/logs/main?follow=true") == (
            200,
            b"one\ntwo\nthree\n",
        )  # ended: follow returns
        assert get("ns/logs/main?previous=true")[0] == 400
        assert get("ns/other/main")[0] == 404
        assert get("ns/logs/main?tailLines=-2")[0] == 400
    finally:
        srv.shutdown()


def test_follow_streams_lines_as_they_come(tmp_path, tls):
    p = pod("slow", "import time\nfor i in range(3):\n    print(i, flush=True); time.sleep(0.5)")
    p["spec"].pop("initContainers")
    seen: list[dict] = []
    r = PodRunner(p, tmp_path, seen.append)
    r.start()
    while not r.running("main"):
        time.sleep(0.05)
    srv = server.serve("127.0.0.1", 0, *tls, lambda ns, name: r)
    ctx = ssl._create_unverified_context()
    try:
        url = f"https://127.0.0.1:{srv.server_address[1]}/containerLogs/ns/slow/main?follow=true"
        with urllib.request.urlopen(url, context=ctx, timeout=10) as resp:
            assert resp.read() == b"0\n1\n2\n"
    finally:
        srv.shutdown()
        r.thread.join(10)
