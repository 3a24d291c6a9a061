"""Bad state and bad input against real local jobs, through the magics a user types:
corrupt config and job files, replica names that try to leave the job directory,
the environment a replica starts with, file modes, and output that must stay bounded.
Every refusal is one line; nothing already received is lost."""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys

import psutil
import pytest

from jupyter_ddl.backends.local import LocalBackend
from jupyter_ddl.config import Config, config_path, load_config
from jupyter_ddl.errors import JobNotFound, ShownError
from jupyter_ddl.manager import JobManager
from jupyter_ddl.models import JobState
from tests.local.conftest import submit, wait

pytestmark = pytest.mark.timeout(240)

OUTSIDE = "ddl-outside-secret"


@pytest.fixture
def shell(monkeypatch, data_dir):
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setenv("JUPYTER_DDL_WIDGETS", "0")
    # IPython makes its user namespace sys.modules["__main__"]: put the real one back
    # afterwards (multiprocessing's spawn, in later tests, needs it)
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    sh = InteractiveShell.instance()
    sh.reset(new_session=True)
    yield sh
    sh.reset(new_session=True)


@pytest.fixture
def ddl(shell, data_dir):
    """``ddl("logs x")`` runs ``%ddl logs x`` over a real local backend."""
    from jupyter_ddl.notebook.magics import load

    manager = JobManager(config=load_config(), backends={"local": LocalBackend()})
    magics = load(shell, manager=manager)
    yield lambda line: magics.ddl(line)
    for job in manager.list(backend="local"):
        if not job.state.finished:
            manager.cancel(job.name, "local")
    manager.close()


def one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text and "Traceback" not in text, text
    return text


@pytest.fixture
def done_job(data_dir):
    """A finished job with two replicas and a file with a known text outside it."""
    backend = LocalBackend()
    name = submit(backend, "print('hello from', rank)\n", "tf-multi-worker-mirrored", {"Worker": 2})  # fmt: skip
    assert wait(backend, name, timeout=60).state == JobState.SUCCEEDED
    sup = json.loads((backend.job_dir(name) / "supervisor.json").read_text())["pid"]
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(sup).wait(10)  # it exits right after writing the final status
    for where in (data_dir, data_dir / "jobs"):  # where "../../outside" and "../../../outside" lead
        (where / "outside.log").write_text(f"2026-01-01T00:00:00.000000Z stdout {OUTSIDE}\n")
    return backend, name


# -- replicas are looked up, never joined into paths --------------------------------------
TRAVERSALS = [
    "../../outside",
    "../../../../../../../var/log/dpkg",
    "worker-0/../../../outside",
    "/etc/passwd",
    "..",
    "worker-9",
    "nosuch",
]


def _magics_taking_a_replica() -> list[str]:
    """Every %ddl command whose parser takes --replica (read from the handlers)."""
    import inspect

    from jupyter_ddl.notebook import commands as ddl_commands

    return [
        name
        for name, handler in ddl_commands._HANDLERS.items()
        if '"--replica"' in inspect.getsource(handler)
    ]


def test_every_magic_taking_a_replica_refuses_names_outside_the_job(done_job, ddl, capsys):
    backend, name = done_job
    commands = _magics_taking_a_replica()
    assert commands == ["logs"]  # guards the enumeration: a new one must be covered here
    for command in commands:
        for bad in TRAVERSALS:
            with pytest.raises(ShownError) as e:
                ddl(f"{command} {name} --replica {bad}")
            assert isinstance(e.value.error, JobNotFound)
            msg = one_line(e.value)
            assert "its replicas: worker-0, worker-1" in msg, msg
    assert OUTSIDE not in capsys.readouterr().out
    ddl(f"logs {name} --replica worker-1")
    assert "hello from 1" in capsys.readouterr().out


def test_the_backend_itself_refuses_them_too(done_job):
    backend, name = done_job
    for bad in TRAVERSALS:
        with pytest.raises(JobNotFound):
            list(backend.logs(name, replica=bad))
    for bad in ("..", "../jobs", "/etc", ".hidden", "a/b"):
        with pytest.raises(JobNotFound):
            backend.get(bad)


# -- corrupt files --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "content,fragment",
    [
        ("[1, 2, 3]", "is not a JSON object"),
        ("{not json", "is not a JSON object"),
        ('{"refresh_hz": 1000, "log_tail": -5, "backend": "nonsense"}', "not valid"),
    ],
)
def test_a_corrupt_config_warns_once_and_falls_back(data_dir, ddl, capsys, content, fragment):
    config_path().write_text(content)
    warnings: list[str] = []
    cfg = load_config(warnings.append)
    assert cfg == Config()
    assert len(warnings) == 1 and str(config_path()) in warnings[0] and fragment in warnings[0]
    ddl("list")  # every command still works
    assert "no jobs yet" in capsys.readouterr().out


@pytest.mark.parametrize(
    "item,fragment",
    [
        ("backend=nonsense", "is no backend (choose local, kubernetes)"),
        ("refresh_hz=1000", "refresh_hz must be from 1 to 10, not 1000"),
        ("log_tail=-5", "log_tail must be at least 1, not -5"),
        ("base_images=pytorch", "base_images takes NAME=VALUE, not 'pytorch'"),
        ("base_images=torch=img:1", "names frameworks (tensorflow, pytorch, mpi), not torch"),
        ("local_max_processes=0", "must be at least 1"),
        ("stall_seconds=soon", "must be a number, not 'soon'"),
        ("local_env_passthrough=A=1", "takes variable names, not A=1"),
        ("nosuch=1", "unknown key 'nosuch'"),
        ("log_tail=99999999999999999999", "log_tail must be at most 100000, not a 20-digit"),
        ("logs_max_lines=1e400", "must be a number"),
        ("local_max_processes=5000", "must be at most 4096"),
        ("stall_seconds=1e300", "must be at most 604800"),
        ("kube_read_timeout=inf", "must be a number"),
        ("python=/bin/false", "'/bin/false' does not run as a Python 3 interpreter"),
        ("python=true", "does not run as a Python 3 interpreter"),
    ],
)
def test_config_values_are_checked_when_set_and_nothing_is_saved(ddl, item, fragment):
    ddl("config log_tail=321")
    saved = config_path().read_text()
    with pytest.raises(ShownError) as e:
        ddl(f"config refresh_hz=2 {item}")  # all or nothing: refresh_hz is not set either
    assert fragment in one_line(e.value)
    assert config_path().read_text() == saved
    assert load_config().refresh_hz == Config().refresh_hz
    assert stat.S_IMODE(config_path().stat().st_mode) == 0o600


@pytest.mark.parametrize(
    "file,content,fragment",
    [
        ("status.json", '{"name": "x", "state": "Exploded"}', "unreadable: status.json"),
        ("status.json", "[]", "unreadable: status.json"),
        ("spec.json", "{truncated", "unreadable: spec.json"),
        ("handle.json", '{"nope": 1}', "unreadable: handle.json"),
    ],
)
def test_a_corrupt_job_file_shows_the_job_as_unreadable(done_job, ddl, capsys, file, content, fragment):  # fmt: skip
    backend, name = done_job
    job_dir = backend.job_dir(name)
    (job_dir / file).write_text(content)
    listed = {j.name: j for j in backend.list()}
    assert fragment in listed[name].message and listed[name].state.finished
    ddl("list")
    row = next(r for r in capsys.readouterr().out.splitlines() if r.startswith(name))
    assert fragment in row, row
    ddl(f"status {name}")
    out = capsys.readouterr().out
    assert fragment in out and "Traceback" not in out
    ddl(f"logs {name}")  # what was logged is still there
    assert "hello from 0" in capsys.readouterr().out
    ddl(f"delete {name}")
    assert not job_dir.exists()


# -- what a replica starts with -------------------------------------------------------------
ENV_CELL = """
import os
for key in ("KERNEL_ONLY_TOKEN", "PASSED_ON", "MY_SECRET", "HOME", "PATH", "LANG"):
    print(key, "set" if key in os.environ else "unset", len(os.environ.get(key, "")), flush=True)
print("umask", oct(os.umask(0o022)), flush=True)
"""


def test_a_replica_gets_the_base_environment_and_only_what_it_asked_for(data_dir, monkeypatch):
    monkeypatch.setenv("KERNEL_ONLY_TOKEN", "tok-3a9f-never-there")
    monkeypatch.setenv("PASSED_ON", "visible")
    monkeypatch.setenv("MY_SECRET", "s3cr3t-77b1")
    monkeypatch.setenv("LANG", "C.UTF-8")
    backend = LocalBackend(Config(local_env_passthrough=["PASSED_ON"]))
    name = submit(backend, ENV_CELL, "tf-mirrored", {"Worker": 1}, secret_env=["MY_SECRET"])
    assert wait(backend, name, timeout=60).state == JobState.SUCCEEDED
    seen = {line.text.split()[0]: line.text.split()[1:] for line in backend.logs(name)}
    assert seen["KERNEL_ONLY_TOKEN"] == ["unset", "0"]
    assert seen["PASSED_ON"] == ["set", "7"]
    assert seen["MY_SECRET"] == ["set", str(len("s3cr3t-77b1"))]
    assert seen["HOME"][0] == seen["PATH"][0] == seen["LANG"][0] == "set"
    assert seen["umask"] == [oct(0o022)]  # the kernel's umask, not the supervisor's 077
    job_dir = backend.job_dir(name)
    for path in [job_dir, *job_dir.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
        if path.is_file():
            data = path.read_bytes()
            assert b"s3cr3t-77b1" not in data and b"tok-3a9f" not in data, path


# -- bounded output and one-line refusals -----------------------------------------------------
def test_logs_without_tail_stop_at_the_limit_and_say_where_the_rest_is(data_dir, ddl, capsys, shell):  # fmt: skip
    backend = LocalBackend()
    code = "for i in range(5000):\n    print(f'line {i}')\n"
    name = submit(backend, code, "tf-mirrored", {"Worker": 1})
    assert wait(backend, name, timeout=60).state == JobState.SUCCEEDED
    ddl("config logs_max_lines=100")
    capsys.readouterr()
    ddl(f"logs {name}")
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 101 and out[99] == "[worker-0] line 99"
    assert (
        "the first 100 lines are shown" in out[100] and f"`%ddl logs {name} --tail N`" in out[100]
    )
    assert str(backend.job_dir(name) / "logs") in out[100]
    ddl(f"logs {name} --tail 3")
    assert capsys.readouterr().out.splitlines() == [f"[worker-0] line {i}" for i in (4997, 4998, 4999)]  # fmt: skip
    for bad, fragment in [
        (f"logs {name} --tail -5", "--tail -5: give a number above 0"),
        (f"logs {name} --tail 3 --tail 4", "--tail is given twice"),
        (f"logs {name} --replica worker-0 --replica worker-0", "--replica is given twice"),
        (f"wait {name} --timeout -5", "--timeout -5: give a number above 0"),
        (f"logs {name} --tail 99999999999999999999999", "--tail a 23-digit number: give"),
        (f"logs {name} --tail 1000000001", "at most 1000000000"),
    ]:
        with pytest.raises(ShownError) as e:
            ddl(bad)
        assert fragment in one_line(e.value), bad


def test_the_job_directory_layout_names_every_file_it_holds(done_job):
    # jobdir's docstring is the layout's one description: a new file must be named there
    from jupyter_ddl.backends.local import jobdir

    backend, name = done_job
    documented = set(re.findall(r"^    (\S+?)/?\s", jobdir.__doc__ or "", re.M))
    present = {p.name for p in backend.job_dir(name).iterdir()}
    assert present <= documented | {"logs"}, present - documented
    assert json.loads((backend.job_dir(name) / "supervisor.json").read_text())["ready"] is True
    assert os.stat(backend.job_dir(name)).st_mode & 0o077 == 0
