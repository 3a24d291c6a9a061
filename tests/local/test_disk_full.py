"""A full disk is named ("no space left on <device> (<path>)") where it happens: the
job directory at submit, `%ddl config`, a supervisor that died of it. The data
directory lies on a real, tiny tmpfs filled to the brim (mounting needs root)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid

import psutil
import pytest

from jupyter_ddl.backends.local import LocalBackend
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.errors import ResourceError, ShownError
from jupyter_ddl.models import JobSpec, JobState

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def small_disk(tmp_path, monkeypatch):
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.decode().strip()}")
    monkeypatch.setenv("JUPYTER_DDL_DATA_DIR", str(mnt / "ddl"))
    (mnt / "ddl").mkdir()
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.fixture
def shell(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setenv("JUPYTER_DDL_WIDGETS", "0")
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    sh = InteractiveShell.instance()
    sh.reset(new_session=True)
    yield sh
    sh.reset(new_session=True)


def fill(mnt) -> None:
    """Write until the filesystem refuses one more byte."""
    fd = os.open(mnt / f"filler-{uuid.uuid4().hex}", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)


def test_submit_on_a_full_disk_names_the_disk(small_disk):
    fill(small_disk)
    backend = LocalBackend()
    spec = JobSpec(name="full", strategy="torch-ddp", replicas={"Master": 1, "Worker": 1})
    with pytest.raises(ResourceError) as e:
        backend.submit(spec, build_bundle("print(1)\n" * 2000))
    msg = str(e.value)
    assert f"no space left on tmpfs at {small_disk}" in msg and "\n" not in msg


def test_config_on_a_full_disk_names_the_disk(small_disk, shell):
    from jupyter_ddl.config import load_config
    from jupyter_ddl.manager import JobManager
    from jupyter_ddl.notebook.magics import load

    manager = JobManager(config=load_config(), backends={"local": LocalBackend()})
    magics = load(shell, manager=manager)
    fill(small_disk)
    with pytest.raises(ShownError) as e:
        magics.ddl("config log_tail=321")
    msg = str(e.value)
    assert f"no space left on tmpfs at {small_disk}" in msg and "config.json" in msg
    assert "\n" not in msg and "Traceback" not in msg


def test_a_supervisor_that_died_on_a_full_disk_is_named(small_disk):
    backend = LocalBackend()
    spec = JobSpec(name="dies", strategy="torch-ddp", replicas={"Master": 1, "Worker": 1})
    backend.submit(spec, build_bundle("import time\nprint('up', flush=True)\ntime.sleep(60)\n"))
    deadline = time.monotonic() + 60
    sup = backend.job_dir("dies") / "supervisor.json"
    while not sup.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    pid = json.loads(sup.read_text())["pid"]
    fill(small_disk)
    psutil.Process(pid).kill()  # as the kernel's OOM killer or a failed write would end it
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(pid).wait(10)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = backend.get("dies")
        if status.state.finished:
            break
        time.sleep(0.2)
    assert status.state == JobState.FAILED
    assert f"no space left on tmpfs at {small_disk}" in status.message, status.message
