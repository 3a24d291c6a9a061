"""Fixtures for running the workshop notebooks in real kernels on the local backend.

``run_notebook(name, lang)`` executes ``notebooks/<name>.ipynb`` (English) or
``notebooks/<lang>/<name>.ipynb`` headless with nbclient (via ``notebooks/execute.py``,
the same runner ``scripts/quickstart`` uses) against an isolated data directory, with
``DDL_WORKSHOP_QUICK=1`` (fewer steps and repeats, the same checks), and returns the
executed notebook and its ``outcome`` dict. Which copies run: ``run_langs``.
After the test, every job of that data directory must have finished and no process
may still carry the directory in its environment.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import psutil
import pytest
import yaml

from tests.support.require import module

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
ARTIFACTS = REPO / ".test-artifacts" / "notebooks"
ALL_LANGS = list(yaml.safe_load((NOTEBOOKS / "i18n" / "languages.yaml").read_text("utf-8")))
_asked = [x.strip() for x in os.environ.get("DDL_WORKSHOP_LANGS", "").split(",") if x.strip()]
LANGS = [lang for lang in ALL_LANGS if lang in _asked] if _asked else ALL_LANGS


def run_langs(index: int) -> list[str]:
    """The copies of the ``index``-th workshop notebook that a run test executes. The code
    is the same in every language (test_notebooks checks each stored copy against the
    sources), so by default the English copy runs, and one other, in turn per notebook:
    every language's stored files run in a real kernel, and the suite does not run the
    same code five times (that was a third of CI's time). ``DDL_WORKSHOP_LANGS``
    (comma-separated) runs every notebook in exactly those languages; ``all`` in all."""
    if _asked:
        return ALL_LANGS if _asked == ["all"] else LANGS
    others = [lang for lang in ALL_LANGS if lang != "en"]
    return ["en", others[index % len(others)]] if others else ["en"]


def notebook_path(name: str, lang: str = "en") -> Path:
    return NOTEBOOKS / (f"{name}.ipynb" if lang == "en" else f"{lang}/{name}.ipynb")


def load_script(name: str) -> ModuleType:
    """Import ``notebooks/<name>.py`` (a script folder, not a package)."""
    spec = importlib.util.spec_from_file_location(f"workshop_{name}", NOTEBOOKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while it loads
    spec.loader.exec_module(mod)
    return mod


def processes_using(data_dir: Path) -> list[psutil.Process]:
    """Live processes whose environment points at ``data_dir``: kernels and supervisors
    inherit JUPYTER_DDL_DATA_DIR, replicas (which get a pod's environment, not the
    kernel's) and their children carry their job's directory in JUPYTER_DDL_JOB_DIR."""
    found = []
    jobs = str(data_dir / "jobs") + os.sep
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        try:
            env = proc.environ()
        except (psutil.Error, OSError):
            continue
        if env.get("JUPYTER_DDL_DATA_DIR") == str(data_dir) or env.get(
            "JUPYTER_DDL_JOB_DIR", ""
        ).startswith(jobs):
            found.append(proc)
    return found


@pytest.fixture
def notebook_env(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The environment kernels inherit (isolated data dir, runtime files in tmp, quiet
    TensorFlow); afterwards no job of the data dir may still run, no process may
    still carry it."""
    module("nbclient")
    module("ipykernel")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    # Only what WORKSHOP.md tells a learner to set: the notebooks hand quick mode to
    # their jobs themselves (--env), no config.json is written.
    monkeypatch.setenv("DDL_WORKSHOP_QUICK", "1")
    assert not (data_dir / "config.json").exists()
    yield data_dir
    leftovers = _finish_jobs(data_dir)
    assert not leftovers, f"jobs still running after the notebook: {leftovers}"


@pytest.fixture
def run_notebook(notebook_env: Path) -> Callable[..., tuple[Any, dict[str, Any]]]:
    runner = load_script("execute")

    def run(name: str, lang: str = "en", timeout: int = 300) -> tuple[Any, dict[str, Any]]:
        start = time.monotonic()
        nb, outcome, _ = runner.execute(
            notebook_path(name, lang), out_dir=ARTIFACTS / lang, timeout=timeout
        )
        print(f"{lang}/{name}: {time.monotonic() - start:.1f} s")  # shown with -s / -rP
        return nb, outcome

    return run


def _finish_jobs(data_dir: Path) -> list[str]:
    """Cancel what is still running (so a failing test leaves nothing behind) and
    report it; then wait briefly for every process of this data dir to end."""
    from jupyter_ddl.config import load_config
    from jupyter_ddl.manager import JobManager

    manager = JobManager(config=load_config())
    running = []
    try:
        for job in manager.list(backend="local"):
            if not job.state.finished:
                running.append(f"{job.name} ({job.state.value})")
                manager.cancel(job.name, backend="local")
    finally:
        manager.close()
    deadline = time.monotonic() + 15
    while processes_using(data_dir) and time.monotonic() < deadline:
        time.sleep(0.3)
    stray = processes_using(data_dir)
    for proc in stray:  # only ours: they carry this test's private data dir
        proc.kill()
    return running + [f"pid {p.pid} {p.name()}" for p in stray]


def code_outputs(nb: Any, startswith: str) -> str:
    """All text output of the code cells whose source starts with ``startswith``."""
    texts = []
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith(startswith):
            for out in cell.get("outputs", []):
                texts.append(out.get("text", ""))
                texts.append(str(out.get("data", {}).get("text/plain", "")))
    return "\n".join(texts)
