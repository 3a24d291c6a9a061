"""A submit either completes or leaves nothing: interrupted (Ctrl-C) or refused by the
disk part-way through writing the job directory, it says which in one line and the
name stays free."""

from __future__ import annotations

import errno
import os
import resource
import signal
import socket
import sys
import threading

import psutil
import pytest

from jupyter_ddl.backends.local import LocalBackend, control, warm
from jupyter_ddl.backends.local.jobdir import write_json
from jupyter_ddl.config import Config
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.errors import JobNotFound, SubmitAborted
from jupyter_ddl.models import JobSpec

pytestmark = [pytest.mark.timeout(120)]


def _spec(name: str) -> JobSpec:
    return JobSpec(name=name, strategy="tf-mirrored", replicas={"Worker": 1})


def _big_bundle(files: int, size: int):
    bundle = build_bundle("print(1)\n")
    for i in range(files):
        bundle.files[f"data/part{i}.py"] = b"#" * size
    return bundle


def _left_nothing(backend: LocalBackend, name: str) -> None:
    assert not (backend.root / name).exists()
    assert name not in [s.name for s in backend.list()]
    with pytest.raises(JobNotFound):
        backend.get(name)


def test_an_interrupted_submit_leaves_nothing_and_says_so(data_dir):
    backend = LocalBackend(Config(local_warm_seconds=0))
    bundle = _big_bundle(20000, 10)  # seconds of writing: the interrupt lands inside
    main = threading.get_ident()
    timer = threading.Timer(0.3, lambda: signal.pthread_kill(main, signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(SubmitAborted) as e:
            backend.submit(_spec("cut"), bundle)
    finally:
        timer.cancel()
    message = str(e.value)
    assert message == (
        "cut was not submitted: the submit was interrupted; nothing was left, "
        "so the cell can run again"
    )
    _left_nothing(backend, "cut")


def test_a_submit_the_disk_refuses_leaves_nothing_and_says_why(data_dir):
    backend = LocalBackend(Config(local_warm_seconds=0))
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, hard))  # writes past 64 KiB fail
    try:
        with pytest.raises(SubmitAborted) as e:
            backend.submit(_spec("full"), _big_bundle(1, 1 << 17))
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert str(e.value) == (
        f"full was not submitted: writing the job directory failed "
        f"({os.strerror(errno.EFBIG)}); nothing was left, so the cell can run again"
    )
    _left_nothing(backend, "full")
    # the name is free: the same job goes in once the disk takes it
    backend.submit(_spec("full"), build_bundle("print(1)\n"))
    assert (backend.root / "full" / "spec.json").exists()
    backend.delete("full")


def test_a_submit_interrupted_while_handing_over_leaves_nothing(data_dir):
    """Interrupted while a spare is asked to take the job (here: a listener, this
    process, that never answers), before any supervisor started."""
    backend = LocalBackend(Config(local_warm_seconds=60))
    root = warm.warm_dir(backend.root.parent)
    root.mkdir(mode=0o700, parents=True)
    me = psutil.Process()
    write_json(
        warm.record_path(root, me.pid),
        {"pid": me.pid, "create_time": me.create_time(), "python": sys.executable,
         "package": control.PACKAGE_PARENT},
    )  # fmt: skip
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with warm.short_address(warm.socket_path(root, me.pid)) as address:
        listener.bind(address)
    listener.listen(1)
    main = threading.get_ident()
    timer = threading.Timer(1.0, lambda: signal.pthread_kill(main, signal.SIGINT))
    timer.start()
    spec = JobSpec(name="handing", strategy="torch-ddp", replicas={"Master": 1})
    try:
        with pytest.raises(SubmitAborted) as e:
            backend.submit(spec, build_bundle("print(1)\n"))
    finally:
        timer.cancel()
        listener.close()
        for path in root.glob("*"):
            path.unlink()
    assert "handing was not submitted: the submit was interrupted" in str(e.value)
    _left_nothing(backend, "handing")


def _processes_in(root) -> list[psutil.Process]:
    """Every live process started for the job directory ``root`` (its supervisor runs
    there and names it on its command line)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            cmdline = proc.info["cmdline"] or []
            if proc.info["status"] != psutil.STATUS_ZOMBIE and str(root) in cmdline:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_a_ctrl_c_between_the_supervisor_start_and_its_record_leaves_no_orphan(
    data_dir, monkeypatch
):
    """The window: the supervisor process exists, its record (supervisor.json) does not
    yet. A real SIGINT arrives there (sent by the kernel's own process as the record is
    about to be written): afterwards either the job runs with its record and is listed,
    or nothing of it is left, no process included; and one line says which."""
    backend = LocalBackend(Config(local_warm_seconds=0))
    real_record = control.record_supervisor
    hit = []

    def interrupted_record(jd, pid, create_time):
        hit.append(pid)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # the kernel's interrupt
        real_record(jd, pid, create_time)

    monkeypatch.setattr(control, "record_supervisor", interrupted_record)
    spec = JobSpec(name="window", strategy="tf-mirrored", replicas={"Worker": 1})
    root = backend.root / "window"
    try:
        with pytest.raises(SubmitAborted) as e:
            backend.submit(spec, build_bundle("import time\ntime.sleep(60)\n"))
        assert hit, "the interrupt did not land in the window"
        if root.exists():
            assert str(e.value) == (
                "window was submitted before the interrupt and runs; `%ddl cancel window` stops it"
            )
            assert (root / "supervisor.json").exists()
            assert "window" in [s.name for s in backend.list()]
        else:
            assert "window was not submitted" in str(e.value)
            orphans = _processes_in(root)
            assert not orphans, f"left running without a job directory: {orphans}"
    finally:
        monkeypatch.undo()
        if root.exists():
            backend.delete("window")
        for proc in _processes_in(root):
            proc.kill()
    assert not _processes_in(root)


def _interrupt_after(fn):
    """``fn``, then a real SIGINT to this thread as it returns (the kernel's interrupt
    landing past the backend's own guard)."""

    def wrapped(*args, **kwargs):
        result = fn(*args, **kwargs)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        return result

    return wrapped


def test_a_ctrl_c_as_the_backend_submit_returns_says_the_job_runs(data_dir, monkeypatch):
    """Past the local backend's guard (its submit returns, the supervisor runs), a
    Ctrl-C reaches the job API: one line says the job runs, and it is listed."""
    from jupyter_ddl.manager import JobManager

    manager = JobManager(config=Config(local_warm_seconds=0))
    backend = manager.backend("local")
    monkeypatch.setattr(backend, "submit", _interrupt_after(backend.submit))
    try:
        with pytest.raises(SubmitAborted) as e:
            manager.submit(_spec("late"), build_bundle("import time\ntime.sleep(60)\n"))
        assert str(e.value) == (
            "late was submitted before the interrupt and runs; `%ddl cancel late` stops it"
        )
        assert not manager.get("late", "local").state.finished
    finally:
        monkeypatch.undo()
        if (backend.root / "late").exists():
            manager.delete("late", "local")
        manager.close()
    assert not _processes_in(backend.root / "late")


def test_a_ctrl_c_before_the_backend_wrote_anything_says_nothing_was_submitted(
    data_dir, monkeypatch
):
    """Before the backend's guard (its checks of the name and the limits), a Ctrl-C
    leaves nothing and says so."""
    from jupyter_ddl.manager import JobManager

    manager = JobManager(config=Config(local_warm_seconds=0))
    backend = manager.backend("local")
    real_submit = backend.submit

    def interrupted_first(spec, bundle):
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        return real_submit(spec, bundle)

    monkeypatch.setattr(backend, "submit", interrupted_first)
    try:
        with pytest.raises(SubmitAborted) as e:
            manager.submit(_spec("early"), build_bundle("print(1)\n"))
    finally:
        monkeypatch.undo()
        manager.close()
    assert str(e.value) == (
        "early was not submitted: the submit was interrupted before it began; "
        "the cell can run again"
    )
    _left_nothing(backend, "early")


# A stand-in spare: a real process that listens as a spare does, takes the job the way a
# spare does (a child forked into the job directory: the supervisor-to-be) and has not
# answered yet when the Ctrl-C comes.
TAKER = """
import json, os, socket, sys, time
from jupyter_ddl.backends.local import warm
root = __import__("pathlib").Path(sys.argv[1])
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
with warm.short_address(warm.socket_path(root, os.getpid())) as address:
    listener.bind(address)
listener.listen(1)
print("listening", flush=True)
conn, _ = listener.accept()
request = json.loads(warm.read_line(conn))
if os.fork() == 0:
    os.setsid()
    os.chdir(request["job"])
    time.sleep(120)
    os._exit(0)
time.sleep(120)
"""


def _working_in(root) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.cwd() == str(root) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_a_ctrl_c_while_a_spare_takes_the_job_leaves_no_process_in_it(data_dir):
    """The spare took the job (its child works in the job directory) but its answer
    has not come when the Ctrl-C does: the submit says nothing was submitted, and no
    process is left working in the directory it removed."""
    import subprocess

    backend = LocalBackend(Config(local_warm_seconds=60))
    root = warm.warm_dir(backend.root.parent)
    root.mkdir(mode=0o700, parents=True)
    taker = subprocess.Popen(
        [sys.executable, "-c", TAKER, str(root)], stdout=subprocess.PIPE, cwd=root
    )
    job = backend.root / "taken"
    try:
        assert taker.stdout.readline() == b"listening\n"
        me = psutil.Process(taker.pid)
        write_json(
            warm.record_path(root, me.pid),
            {"pid": me.pid, "create_time": me.create_time(), "python": sys.executable,
             "package": control.PACKAGE_PARENT},
        )  # fmt: skip
        main = threading.get_ident()
        timer = threading.Timer(1.5, lambda: signal.pthread_kill(main, signal.SIGINT))
        timer.start()
        spec = JobSpec(name="taken", strategy="torch-ddp", replicas={"Master": 1})
        try:
            with pytest.raises(SubmitAborted) as e:
                backend.submit(spec, build_bundle("print(1)\n"))
        finally:
            timer.cancel()
        assert "taken was not submitted: the submit was interrupted" in str(e.value)
        _left_nothing(backend, "taken")
        left = _working_in(job)
        assert not left, f"left working in the removed job directory: {left}"
    finally:
        for proc in _working_in(job):
            proc.kill()
        taker.kill()
        taker.wait(5)
        for path in root.glob("*"):
            path.unlink()
