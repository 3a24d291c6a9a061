"""Messages that say what happened: pip's failure without its colour codes, a missing
requirements file named as such, a job's age never negative."""

from __future__ import annotations

import time

import pytest

from jupyter_ddl.backends.local.requirements import _last_line
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.notebook.capture.requirements import read_requirements


def test_pip_failure_line_is_its_words_not_a_colour_reset(tmp_path):
    log = tmp_path / "pip.log"
    log.write_text(
        "Collecting nosuchpkg\n"
        "\x1b[31mERROR: No matching distribution found for nosuchpkg\x1b[0m\n"
        "\x1b[0m\n\x1b[1;31m\x1b[0m\n"
    )
    assert _last_line(log) == "ERROR: No matching distribution found for nosuchpkg"
    log.write_text("\x1b[33mnote: something broke\x1b[0m\n\x1b[0m\n")
    assert _last_line(log) == "note: something broke"


@pytest.mark.parametrize("value", ["reqs.txt", "./requirements", "~/missing.in", "dir/req"])
def test_a_missing_requirements_file_is_named(value, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValidationError, match=rf"--requirements {value}: no such file"):
        read_requirements(value)


def test_package_names_and_urls_stay_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert read_requirements("numpy,einops") == ["numpy", "einops"]
    assert read_requirements("git+https://github.com/a/b") == ["git+https://github.com/a/b"]
    (tmp_path / "r.txt").write_text("scipy  # x\n")
    assert read_requirements("r.txt") == ["scipy"]


def test_a_job_from_a_clock_ahead_is_not_negative_minutes_old(shell, magics, fake, capsys):
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.models import JobSpec

    fake.submit(
        JobSpec(name="ahead", strategy="torch-ddp", replicas={"Master": 1}), build_bundle("x=1")
    )
    fake.jobs["ahead"].status.created = time.time() + 3600
    shell.run_line_magic("ddl", "list")
    row = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("ahead"))
    assert "-60 min" not in row and " 0 min" in row, row


def test_a_cell_raising_keyboardinterrupt_says_so(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    cell = tmp_path / "cell.py"
    cell.write_text("x = 1\nraise KeyboardInterrupt\n")
    runtime = Path(__file__).resolve().parents[2] / "jupyter_ddl" / "runtime"
    r = subprocess.run(
        [sys.executable, "-c", f"import ddl_runtime; ddl_runtime.main({str(cell)!r}, {{}})"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(runtime)},
    )  # fmt: skip
    assert r.returncode == 130, r.stderr
    assert f"KeyboardInterrupt at {cell}:2: the cell was interrupted" in r.stderr, r.stderr
