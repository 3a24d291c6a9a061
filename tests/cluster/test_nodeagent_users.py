"""Who a pod's container runs as on the node agent (users.py, enter.py), and the stand-in
for Trainer's deepspeed runtime image (image.py): no apiserver needed."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cluster"))

from nodeagent import enter, image, users

RUNTIME = "ghcr.io/kubeflow/trainer/deepspeed-runtime"


def test_the_deepspeed_stand_in_is_the_runtime_image_or_one_named_as_built_on_it():
    for ref in (
        RUNTIME,
        f"{RUNTIME}:v2.3.0",
        f"{RUNTIME}@sha256:{'0' * 64}",
        "localhost:5000/team/deepspeed-runtime-ours:1",
    ):
        assert image.is_deepspeed_runtime(ref), ref
    for ref in ("pytorch/pytorch:2.5.1", "team/deepspeed:1", "team/my-deepspeed-runtime:1"):
        assert not image.is_deepspeed_runtime(ref), ref
    assert image.workdir(RUNTIME) == image.image_env(RUNTIME)["HOME"] == "/home/mpiuser"
    assert image.workdir("python:3.11") is None and image.image_env("python:3.11") == {}


def test_the_stand_ins_passwd_gives_uid_1000_to_mpiuser_only():
    text = image.passwd_text(RUNTIME)
    holders = [ln for ln in text.splitlines() if ln.split(":")[2] == "1000"]
    assert holders == ["mpiuser:x:1000:1000::/home/mpiuser:/bin/bash"], holders
    assert text.startswith("root:x:0:0:")
    assert image.passwd_text("python:3.11") == Path("/etc/passwd").read_text()


def test_identity_follows_the_container_then_the_pod_then_the_images_passwd():
    passwd = "root:x:0:0::/root:/bin/sh\nmpiuser:x:1000:1001::/home/mpiuser:/bin/bash\n"
    pod = {"spec": {"securityContext": {"runAsUser": 5, "fsGroup": 1000}}}
    assert users.identity(pod, {}, passwd) == (5, 0, [0, 1000])
    c = {"securityContext": {"runAsUser": 1000}}
    assert users.identity(pod, c, passwd) == (1000, 1001, [1000, 1001])
    pod["spec"]["securityContext"].update(runAsGroup=7, supplementalGroups=[9])
    assert users.identity(pod, c, passwd) == (1000, 7, [7, 9, 1000])
    assert users.identity({"spec": {}}, {}, passwd) == (0, 0, [0])


def test_fs_group_owns_a_secret_read_only_and_an_empty_dir_writable(tmp_path):
    secret, empty = tmp_path / "secret", tmp_path / "work"
    secret.mkdir()
    empty.mkdir()
    (secret / "id_rsa").write_text("k")
    (secret / "id_rsa").chmod(0o640)
    pod = {"spec": {"securityContext": {"fsGroup": 1000}}}
    users.give_to_fs_group({"name": "s", "secret": {}}, secret, pod)
    users.give_to_fs_group({"name": "w", "emptyDir": {}}, empty, pod)
    users.give_to_fs_group({"name": "h", "hostPath": {"path": "/x"}}, tmp_path, pod)
    key = (secret / "id_rsa").stat()
    assert key.st_gid == 1000 and stat.S_IMODE(key.st_mode) == 0o640
    assert empty.stat().st_gid == 1000 and empty.stat().st_mode & (stat.S_IWGRP | stat.S_ISGID)
    assert tmp_path.stat().st_gid == 0  # hostPath keeps its owner


def test_a_directory_others_may_not_enter_above_the_interpreter_is_exposed():
    top = tempfile.mkdtemp(prefix="jddl-users-")  # 0700, in the world-enterable /tmp
    try:
        inner = os.path.join(top, "versions", "3.11")
        os.makedirs(inner)
        assert users.exposures([inner, inner]) == [[top, inner]]
        os.chmod(top, 0o755)
        assert users.exposures([inner]) == []
    finally:
        shutil.rmtree(top)


@pytest.mark.skipif(os.geteuid() != 0, reason="a private mount namespace and setuid need root")
def test_a_container_runs_as_mpiuser_with_the_interpreter_reachable(tmp_path):
    pod_dir = tmp_path / "pod"
    pod_dir.mkdir(mode=0o700)
    prefix = os.path.dirname(sys.executable)
    path = f"{prefix}:/usr/bin:/bin"
    made = image.user_mounts(pod_dir, "node-0", RUNTIME, path, "")
    plan = {
        "hostname": None,
        "mounts": [[s, t, ro] for s, t, ro in made],
        "record": str(tmp_path / "record"),
        "cwd": "/home/mpiuser",
        "argv": [
            "python",
            "-c",
            "import os, pwd; open('made', 'w').write('x'); "
            "print(os.getuid(), os.getgid(), pwd.getpwuid(os.getuid()).pw_name, os.getcwd())",
        ],
        "user": [1000, 1000, [1000]],
        "expose": users.exposures(users.interpreter_paths(prefix, "")),
    }
    (pod_dir / "plan.json").write_text(json.dumps(plan))
    got = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-I", "-S",
         enter.__file__, str(pod_dir / "plan.json")],
        capture_output=True, text=True, timeout=120, env={"PATH": path},
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == ["1000", "1000", "mpiuser", "/home/mpiuser"], got.stdout
    home = pod_dir / "image-node-0" / "home"
    assert (home / "made").stat().st_uid == 1000
    assert "Port 2222" in (home / ".sshd_config").read_text()
    # the mount point made on this machine is recorded for `scripts/cluster down`
    recorded = (tmp_path / "record").read_text().split() if (tmp_path / "record").exists() else []
    for top in recorded:
        if top == "/home/mpiuser":
            os.rmdir(top)
