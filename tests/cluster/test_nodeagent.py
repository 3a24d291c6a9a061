"""The node agent's parts that need no apiserver: CRI log records, a pod run as local
processes with the kubelet's statuses, and the kubelet log API over HTTPS."""

from __future__ import annotations

import base64
import os
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cluster"))

from nodeagent import crilog, enter, envs, hosts, netns, server, volumes
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
    # while its init container runs, the main one waits as PodInitializing (the kubelet's
    # default for a pod with init containers), never ContainerCreating
    before = [s["containerStatuses"][0]["state"].get("waiting", {}).get("reason") for s in seen]
    assert before[0] == "PodInitializing" and "ContainerCreating" not in before, before
    text = crilog.render(crilog.read_all(r.log_path("main", 0)), False)
    assert text == b"hello ok\n"


def test_a_container_without_working_dir_runs_in_a_directory_of_its_pod(tmp_path, monkeypatch):
    agent = tmp_path / "agent"
    agent.mkdir()
    monkeypatch.chdir(agent)
    script = "import os; open('left.txt', 'w').close(); print(os.getcwd())"
    r, seen = run_pod(tmp_path, pod("cwd", script))
    assert seen[-1]["phase"] == "Succeeded"
    where = crilog.render(crilog.read_all(r.log_path("main", 0)), False).decode().strip()
    assert where != str(agent) and not (agent / "left.txt").exists()
    assert (Path(where) / "left.txt").exists() and Path(where).is_relative_to(tmp_path)


def test_a_failing_pod_under_never_fails_with_its_exit_code(tmp_path):
    _, seen = run_pod(
        tmp_path, pod("bad", "import sys; print('boom', file=sys.stderr); sys.exit(3)")
    )
    term = seen[-1]["containerStatuses"][0]["state"]["terminated"]
    assert seen[-1]["phase"] == "Failed" and term["exitCode"] == 3 and term["reason"] == "Error"


def test_sshd_on_a_notebook_image_fails_to_start_as_containerd_reports_it(tmp_path):
    """Kubeflow's notebook images have no sshd: the stand-in refuses to exec it, and
    the container ends as the runtime ends it, StartError with exit code 128."""
    p = pod("nosshd", "")
    p["spec"]["initContainers"] = []
    p["spec"]["containers"][0].update(
        image="kubeflownotebookswg/jupyter-scipy:v1.9.0", command=["/usr/sbin/sshd", "-De"]
    )
    _, seen = run_pod(tmp_path, p)
    term = seen[-1]["containerStatuses"][0]["state"]["terminated"]
    assert seen[-1]["phase"] == "Failed", seen[-1]
    assert (term["exitCode"], term["reason"]) == (128, "StartError"), term
    assert 'exec: "/usr/sbin/sshd": stat /usr/sbin/sshd: no such file' in term["message"]


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
    while not r.running("main", 0):
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


# -- the pod's sandbox: pure parts ----------------------------------------------------


def test_expand_follows_the_kubelet_rules():
    env = {"A": "one", "EMPTY": ""}
    assert envs.expand("$(A)-x", env) == "one-x"
    assert envs.expand("$$(A) $(NOPE) $(EMPTY)|", env) == "$(A) $(NOPE) |"
    assert envs.expand("$(A", env) == "$(A"
    assert envs.expand("cost $5 $", env) == "cost $5 $"
    assert envs.expand("$$$(A)", env) == "$one"


def test_environment_orders_envfrom_env_and_refs():
    objects = {
        ("configmaps", "cm"): {"data": {"K": "from-cm", "bad name": "skipped"}},
        ("secrets", "s"): {"data": {"pw": base64.b64encode(b"hunter2").decode()}},
    }

    def fetch(kind, name):
        return objects.get((kind, name))

    p = {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": {}}
    c = {
        "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "X_"}],
        "env": [
            {"name": "X_K", "value": "env wins over $(X_K)"},
            {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s", "key": "pw"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "LATER", "value": "$(PW)/$(UNSET)/$(PATH)"},
            {
                "name": "GONE",
                "valueFrom": {"configMapKeyRef": {"name": "no", "key": "k", "optional": True}},
            },
        ],
        "command": ["echo", "$(LATER)"],
    }
    env = envs.environment(p, c, "10.0.0.9", fetch)
    assert env == {
        "X_K": "env wins over from-cm",
        "PW": "hunter2",
        "IP": "10.0.0.9",
        "LATER": "hunter2/$(UNSET)/$(PATH)",
    }
    assert envs.command_line(c, env) == ["echo", "hunter2/$(UNSET)/$(PATH)"]
    c["env"].append({"name": "M", "valueFrom": {"secretKeyRef": {"name": "s", "key": "nokey"}}})
    with pytest.raises(envs.ConfigError, match="nokey"):
        envs.environment(p, c, "10.0.0.9", fetch)


def _pod(name, labels=None, ip="", hostname=None, subdomain=None, ns="ns", phase="Running"):
    spec = {k: v for k, v in (("hostname", hostname), ("subdomain", subdomain)) if v}
    return {
        "metadata": {"name": name, "namespace": ns, "uid": name, "labels": labels or {}},
        "spec": spec,
        "status": {"podIP": ip, "phase": phase},
    }


def _svc(name, selector, headless=True, ns="ns"):
    return {
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": selector, "clusterIP": "None" if headless else "10.96.0.5"},
    }


def test_hosts_name_pods_and_services_as_cluster_dns_would():
    me = _pod("job-node-0-0-x", {"j": "job"}, hostname="job-node-0-0", subdomain="job")
    peer = _pod("job-node-0-1-y", {"j": "job"}, "10.1.0.3", "job-node-0-1", "job")
    master = _pod("pt-master-0", {"r": "m"}, "10.1.0.4")
    done = _pod("old", {"r": "m"}, "10.1.0.9", phase="Succeeded")
    other = _pod("far", {"r": "f"}, "10.1.0.5", ns="other")
    svcs = [
        _svc("job", {"j": "job"}),
        _svc("pt-master-0", {"r": "m"}),
        _svc("web", {"r": "m"}, headless=False),
        _svc("far", {"r": "f"}, ns="other"),
        _svc("empty", {"r": "nobody"}),
    ]
    text = hosts.render(me, "10.1.0.2", [me, peer, master, done, other], svcs)
    lines = text.splitlines()
    assert lines[1] == "127.0.0.1\tlocalhost"
    own = "10.1.0.2\tjob-node-0-0.job.ns.svc.cluster.local job-node-0-0.job.ns.svc job-node-0-0.job job-node-0-0"
    assert lines[3] == own
    assert (
        "10.1.0.3\tjob-node-0-1.job.ns.svc.cluster.local job-node-0-1.job.ns.svc job-node-0-1.job"
        in lines
    )
    assert "10.1.0.2\tjob.ns.svc.cluster.local job.ns.svc job" in lines
    assert "10.1.0.3\tjob.ns.svc.cluster.local job.ns.svc job" in lines
    assert "10.1.0.4\tpt-master-0.ns.svc.cluster.local pt-master-0.ns.svc pt-master-0" in lines
    assert "10.1.0.4\tweb.ns.svc.cluster.local web.ns.svc web" in lines
    assert "10.1.0.5\tfar.other.svc.cluster.local far.other.svc" in lines
    assert "10.1.0.9" not in text and "empty" not in text
    assert hosts.render(me, "10.1.0.2", [peer, other, master], svcs[::-1]) == text


def test_hosts_file_is_rewritten_in_place(tmp_path):
    f = tmp_path / "hosts"
    assert hosts.write_in_place(f, "a\n")
    inode = f.stat().st_ino
    assert not hosts.write_in_place(f, "a\n")
    assert hosts.write_in_place(f, "b\n") and f.read_text() == "b\n" and f.stat().st_ino == inode


def test_volume_files_decode_binary_data_and_honour_items_and_modes():
    cm = {"data": {"a.txt": "A"}, "binaryData": {"b.bin": base64.b64encode(b"\x00\xff").decode()}}
    sec = {"data": {"k": base64.b64encode(b"v").decode()}}

    def fetch(kind, name):
        return {("configmaps", "cm"): cm, ("secrets", "s"): sec}.get((kind, name))

    p = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"b": "2", "a": "1"}},
        "spec": {},
    }

    def files(vol):
        return volumes.volume_files(vol, p, "10.0.0.2", fetch, lambda aud, secs: f"tok-{aud}")

    assert files({"configMap": {"name": "cm"}}) == {
        "a.txt": (b"A", 0o644),
        "b.bin": (b"\x00\xff", 0o644),
    }
    got = files(
        {"configMap": {"name": "cm", "items": [{"key": "b.bin", "path": "d/x", "mode": 0o600}]}}
    )
    assert got == {"d/x": (b"\x00\xff", 0o600)}
    assert files({"secret": {"secretName": "s", "defaultMode": 0o400}}) == {"k": (b"v", 0o400)}
    assert files({"configMap": {"name": "none", "optional": True}}) == {}
    with pytest.raises(envs.ConfigError, match='"none" not found'):
        files({"configMap": {"name": "none"}})
    with pytest.raises(envs.ConfigError, match="leaves its volume"):
        files({"configMap": {"name": "cm", "items": [{"key": "a.txt", "path": "../x"}]}})
    projected = files(
        {
            "projected": {
                "sources": [
                    {"serviceAccountToken": {"path": "token", "audience": "api"}},
                    {"configMap": {"name": "cm", "items": [{"key": "a.txt", "path": "ca.crt"}]}},
                    {
                        "downwardAPI": {
                            "items": [
                                {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}
                            ]
                        }
                    },
                ]
            }
        }
    )
    assert projected == {
        "token": (b"tok-api", 0o600),
        "ca.crt": (b"A", 0o644),
        "labels": (b'a="1"\nb="2"', 0o644),
    }
    assert files({"emptyDir": {}}) is None


def test_mounts_are_planned_parents_first_read_only_where_the_kubelet_says():
    vols = {
        "code": {"name": "code", "configMap": {"name": "cm"}},
        "work": {"name": "work", "emptyDir": {}},
        "data": {"name": "data", "persistentVolumeClaim": {"claimName": "c"}},
    }
    sources = {"code": "/d/code", "work": "/d/work", "data": "/claims/c"}
    c = {
        "volumeMounts": [
            {"name": "work", "mountPath": "/w/sub/deep/"},
            {"name": "code", "mountPath": "/w/code"},
            {"name": "work", "mountPath": "/w"},
            {"name": "data", "mountPath": "/data", "subPathExpr": "$(POD)", "readOnly": True},
        ]
    }
    plan = volumes.plan_mounts(c, vols, sources, {"POD": "p-1"})
    assert plan == [
        volumes.Mount("/d/work", "/w", False),
        volumes.Mount("/claims/c/p-1", "/data", True),
        volumes.Mount("/d/code", "/w/code", True),
        volumes.Mount("/d/work", "/w/sub/deep", False),
    ]
    with pytest.raises(envs.ConfigError, match="names no volume"):
        volumes.plan_mounts({"volumeMounts": [{"name": "x", "mountPath": "/x"}]}, vols, sources, {})


def test_network_names_fit_linux_and_carry_the_prefix():
    for name in netns.names("0f6e5a4b-1c2d-4e3f-8a9b-0c1d2e3f4a5b"):
        assert name.startswith("jddl") and len(name) <= 15
    with pytest.raises(netns.NetError, match="/16 to /29"):
        netns.Network("10.0.0.0/8")


def test_a_missing_mount_point_is_made_and_its_top_recorded_unless_inside_a_mount(tmp_path):
    record = tmp_path / "mountpoints"
    enter.ensure(str(tmp_path / "a" / "b" / "c"), False, [], str(record))
    enter.ensure(str(tmp_path / "a" / "file"), True, [], str(record))
    enter.ensure(str(tmp_path / "m" / "x"), False, [str(tmp_path / "m")], str(record))
    assert (tmp_path / "a" / "b" / "c").is_dir() and (tmp_path / "a" / "file").is_file()
    assert record.read_text().splitlines() == [str(tmp_path / "a"), str(tmp_path / "a" / "file")]
    enter.ensure(str(tmp_path / "a" / "b"), False, [], str(record))  # there: nothing new
    assert len(record.read_text().splitlines()) == 2


def test_a_mount_point_another_container_makes_first_is_no_error(tmp_path, monkeypatch):
    """An MPIJob's two workers on this machine both mount their ssh Secret at a missing
    /root/.ssh: the one that finds it missing but makes it second still starts."""
    target, record = tmp_path / "root" / ".ssh", tmp_path / "mountpoints"
    real = os.path.lexists

    def the_other_worker_makes_it_just_after_this_check(p):
        there = real(p)
        if p == str(target) and not there:
            target.mkdir(parents=True)
        return there

    monkeypatch.setattr(enter.os.path, "lexists", the_other_worker_makes_it_just_after_this_check)
    enter.ensure(str(target), False, [], str(record))
    assert target.is_dir() and record.read_text().splitlines() == [str(target)]
