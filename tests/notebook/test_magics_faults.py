"""Bad input to %%distribute gives one line and submits nothing; risky input warns."""

from __future__ import annotations

import pytest

from jupyter_ddl.errors import CaptureError, ShownError, ValidationError
from jupyter_ddl.notebook.args import secret_looking


@pytest.mark.parametrize(
    "flags,cell,error,fragment",
    [
        ("--timeout 8", "x = 1", ValidationError, "bounds how long --wait waits; add --wait"),
        ("--wait --timeout -5", "x = 1", ValidationError, "--timeout -5: give the seconds"),
        ("--wait --timeout 0", "x = 1", ValidationError, "above 0"),
        ("--wait --timeout nan", "x = 1", ValidationError, "above 0"),
        ("--replicas 2 --replicas 3", "x = 1", ValidationError, "--replicas is given twice"),
        ("-n 2 --replicas 3", "x = 1", ValidationError, "-n is given twice (--replicas again)"),
        ("--name a --name=b", "x = 1", ValidationError, "--name is given twice"),
        ("--env A=1 --env A=2", "x = 1", ValidationError, "--env A is given twice"),
        ("", "x = 1\ny = '\ud800'\n", CaptureError, "the cell: line 2 holds '\\ud800'"),
        ("--name '\udcff'", "x = 1", CaptureError, "the %%distribute line: line 1"),
    ],
)
def test_bad_input_is_one_line_and_submits_nothing(shell, magics, fake, flags, cell, error, fragment):  # fmt: skip
    with pytest.raises(ShownError) as e:
        shell.run_cell_magic("distribute", f"--strategy torch-ddp {flags}", cell)
    assert isinstance(e.value.error, error), e.value
    assert fragment in str(e.value) and "\n" not in str(e.value)
    assert fake.submitted == []


def test_repeatable_flags_may_repeat(shell, magics, fake, monkeypatch):
    monkeypatch.setenv("S", "x")
    shell.run_cell_magic(
        "distribute",
        "--strategy torch-ddp --env A=1 --env B=2 --env A=1 --secret-env S --secret-env S "
        "-r numpy -r scipy --name rep --wait --timeout 1",
        "x = 1",
    )
    spec = fake.submitted[-1][0]
    assert spec.env == {"A": "1", "B": "2"} and spec.secret_env == ["S"]


def test_env_names_that_look_like_secrets_warn_towards_secret_env(shell, magics, fake, capsys):
    shell.run_cell_magic(
        "distribute",
        "--strategy torch-ddp --env DB_PASSWORD=hunter2 --env EPOCHS=3 --name w",
        "x=1",
    )
    err = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(err) == 1
    assert (
        "--env DB_PASSWORD looks like a secret" in err[0] and "--secret-env DB_PASSWORD" in err[0]
    )
    assert "hunter2" not in err[0]
    assert fake.submitted[-1][0].env["EPOCHS"] == "3"  # a warning, not a refusal


def test_secret_looking_names():
    names = [
        "PASSWORD", "DB_PASSWD", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "API_KEY", "OPENAI_APIKEY",
        "GOOGLE_APPLICATION_CREDENTIALS", "SSH_PRIVATE", "GITHUB_PAT", "BASIC_AUTH",
        "EPOCHS", "KEYBOARD_LAYOUT", "MONKEY", "PWD", "BATCH_SIZE", "AUTHOR",
    ]  # fmt: skip
    assert secret_looking(names) == names[:10]


@pytest.mark.parametrize(
    "flags",
    [
        "--replicas 1000000",
        "--replicas 99999999999999999999999",
        "--workers 99999999999999999999999",
        "--strategy tf-parameter-server --ps 5000 --replicas 2",
    ],
)
def test_absurd_counts_are_refused_in_one_line_at_once(shell, magics, fake, flags):
    import time

    line = flags if "--strategy" in flags else f"--strategy torch-ddp {flags}"
    t0 = time.monotonic()
    with pytest.raises(ShownError) as e:
        shell.run_cell_magic("distribute", line, "x = 1")
    took = time.monotonic() - t0
    assert isinstance(e.value.error, ValidationError), e.value
    assert "above the limit of 1000" in str(e.value) and "\n" not in str(e.value)
    assert len(str(e.value)) < 300
    assert took < 0.1, took
    assert fake.submitted == []


@pytest.mark.parametrize("n", [1001, 10**6, 10**23])
def test_a_spec_with_absurd_counts_is_refused_before_any_per_replica_work(n):
    import time

    from jupyter_ddl import validation
    from jupyter_ddl.models import JobSpec

    spec = JobSpec(name="j", strategy="torch-ddp", replicas={"Master": 1, "Worker": n})
    t0 = time.monotonic()
    found = validation.problems(spec)
    assert time.monotonic() - t0 < 0.1
    assert len(found) == 1 and "above the limit of 1000" in found[0]
