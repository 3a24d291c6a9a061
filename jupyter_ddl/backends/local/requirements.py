"""A job's pip requirements, installed into a directory shared by every job that
asks for the same requirements with the same interpreter (a cache keyed by both)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from jupyter_ddl.errors import DDLError
from jupyter_ddl.i18n import tr


def cache_key(requirements: Sequence[str], python: str) -> str:
    """Same (sorted) requirements and interpreter -> same key."""
    text = python + "\n" + "\n".join(sorted(r.strip() for r in requirements))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def install(
    data_dir: Path,
    requirements: Sequence[str],
    python: str,
    log: Path,
    timeout: float = 900,
    stopped: Callable[[], bool] = lambda: False,
) -> Path:
    """The directory holding ``requirements`` for ``python``, installing it on first use.

    Raises DDLError naming the failing pip output line when pip fails, or when
    ``stopped()`` turns true meanwhile (a cancel: pip is stopped at once).
    """
    root = data_dir / "requirements"
    root.mkdir(parents=True, exist_ok=True)
    key = cache_key(requirements, python)
    target = root / key
    if (target / ".complete").exists():
        return target
    with open(root / f"{key}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two jobs with the same needs install once
        if (target / ".complete").exists():
            return target
        tmp = root / f"{key}.tmp{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        argv = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
        argv += ["--target", str(tmp), *requirements]
        with open(log, "ab") as out:
            rc = _run(argv, out, timeout, stopped)
        if rc is None:
            shutil.rmtree(tmp, ignore_errors=True)
            raise DDLError(tr("installing requirements was stopped: the job was cancelled"))
        if rc != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise DDLError(
                tr(
                    "installing requirements {names} failed: {last}",
                    names=" ".join(requirements), last=_last_line(log),
                ),
                hint=tr(
                    "fix the `!pip install` line of the cell; setup.log in the job directory "
                    "has pip's output"
                ),
            )  # fmt: skip
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
        (target / ".complete").write_text("\n".join(requirements))
    return target


def _run(
    argv: list[str], out: IO[bytes], timeout: float, stopped: Callable[[], bool]
) -> int | None:
    """pip's exit code (-1 past ``timeout``); None when ``stopped()`` ended it."""
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while True:
        try:
            return proc.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
        if stopped() or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            return None if stopped() else -1


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def _last_line(log: Path) -> str:
    """pip's own words for the failure: its last ERROR line, else its last line with
    any letter in it (pip ends with colour resets and rules), colour codes removed."""
    try:
        text = _ANSI.sub("", log.read_text(errors="replace"))
    except OSError:
        return "no output"
    lines = [ln.strip() for ln in text.splitlines() if any(c.isalnum() for c in ln)]
    errors = [ln for ln in lines if ln.startswith("ERROR")]
    return (errors or lines or ["no output"])[-1][:300]
