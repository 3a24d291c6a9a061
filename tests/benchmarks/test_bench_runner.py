"""The benchmark harness: discovery, child processes under budgets, the table,
failed rows, exit codes, no processes left behind. Not a timed test: the figures the
stand-in modules measure are real but their values are not checked."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from benchmarks import runner
from benchmarks.table import COLUMNS, Row, fmt_figure, fmt_number, render_markdown, render_text

ROOT = Path(runner.__file__).resolve().parent.parent

# Measures something real (a sort vs a baseline sort) and reports how it was called.
GOOD = """
import time
from benchmarks.table import Row, summarize

def _time(f):
    t = time.perf_counter(); f(); return time.perf_counter() - t

def run(repeats: int = 5, quick: bool = False) -> list[Row]:
    data = list(range(20000, 0, -1))
    ours = [_time(lambda: sorted(data)) for _ in range(repeats)]
    base = [_time(lambda: list(data).sort()) for _ in range(repeats)]
    (om, orng), (bm, brng) = summarize(ours), summarize(base)
    return [Row("stand-in", f"sort, repeats={repeats}, quick={quick}", om, bm, "list.sort",
                "≤ 1000×", om / bm <= 1000, "s", orng, brng)]
"""
MISSED = """
from benchmarks.table import Row

def run(repeats):
    return [Row("missed", "always over", 2.0, 1.0, "one", "≤ 1×", False)]
"""
BROKEN = """
def run(repeats=3):
    raise ValueError("registry down at 127.0.0.1:5000, retried 3 times\\nsecond line of detail")
"""
SLOW = """
import os, subprocess, sys, time

def run(repeats=3, budget_s=None):
    child = subprocess.Popen(["sleep", "300"])
    with open(os.environ["PIDFILE"], "w") as f:
        f.write(f"{os.getpid()} {child.pid}")
    print(f"slow: budget {budget_s}", flush=True)
    time.sleep(300)
"""
CRASH = """
import os, sys

def run():
    print("last words before the crash", flush=True)
    os._exit(3)
"""
NO_BASELINE = """
from benchmarks.table import Row

def run(repeats=3):
    return [Row("lonely", "figure", 1.0, None, "", "≤ 2", True)]
"""
HELPER = "def helper():\n    return 1\n"


def make_package(tmp_path: Path, name: str, modules: dict[str, str]) -> Path:
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for mod, src in modules.items():
        (pkg / f"{mod}.py").write_text(textwrap.dedent(src))
    return pkg


def bench(tmp_path: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120):
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *args],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def table_rows(stdout: str) -> list[str]:
    """The table's body lines (after the header and the dashes, before the notes)."""
    lines = stdout.splitlines()
    assert lines[0].split()[:2] == ["area", "measure"], stdout
    assert set(lines[1].replace(" ", "")) == {"-"}
    return [ln for ln in lines[2:] if ln and not ln.startswith("!")]


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"


def test_clean_run_prints_one_table_and_writes_markdown(tmp_path):
    make_package(tmp_path, "okbench", {"good": GOOD, "helper": HELPER, "_private": BROKEN})
    out = tmp_path / "out.md"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    r = bench(
        tmp_path,
        "--quick",
        "--package",
        "okbench",
        "--output",
        str(out),
        env={"TMPDIR": str(scratch)},
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert not list(scratch.iterdir())  # nothing failed: the module logs are gone
    rows = table_rows(r.stdout)
    assert len(rows) == 1  # helper has no run(), _private is skipped
    assert "repeats=1, quick=True" in rows[0] and rows[0].rstrip().endswith("pass")
    assert "list.sort:" in rows[0] and "×" in rows[0]
    md = out.read_text()
    assert "| " + " | ".join(COLUMNS) + " |" in md
    assert "UTC" in md and "CPUs" in md and "memory" in md and "quick run (1 repeats)" in md
    assert md.count("| stand-in |") == 1


def test_failures_become_one_line_rows_and_exit_nonzero(tmp_path):
    modules = {"good": GOOD, "broken": BROKEN, "slow": SLOW, "crash": CRASH}
    modules["no_baseline"] = NO_BASELINE
    make_package(tmp_path, "badbench", modules)
    pidfile = tmp_path / "pids"
    t = time.monotonic()
    r = bench(
        tmp_path,
        "--package",
        "badbench",
        "--repeats",
        "2",
        "--budget",
        "6",
        "--output",
        str(tmp_path / "o.md"),
        env={"PIDFILE": str(pidfile), "TMPDIR": str(tmp_path)},
    )
    assert time.monotonic() - t < 60  # the slow module was stopped at its budget
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stdout
    rows = table_rows(r.stdout)
    assert len(rows) == 5
    notes = [ln for ln in r.stdout.splitlines() if ln.startswith("!")]
    assert (
        "! broken: ValueError: registry down at 127.0.0.1:5000, retried 3 times" in notes
    )  # first line only
    assert any("slow: exceeded its 6 s budget" in n for n in notes)
    assert any("crash: child exited 3: last words before the crash" in n for n in notes)
    assert "! lonely / figure: no baseline measured in this run" in notes
    assert any("repeats=2, quick=False" in row for row in rows)
    (logs,) = tmp_path.glob("ddl-bench-*")  # kept, since modules failed
    assert f"module logs kept in {logs}" in r.stderr
    assert "slow: budget 6.0" in (logs / "slow.log").read_text()
    # The module's process and the one it started were both ended.
    pids = [int(p) for p in pidfile.read_text().split()]
    deadline = time.monotonic() + 5
    while not all(gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(gone(p) for p in pids), pids


def test_missed_target_exits_one_and_only_filters(tmp_path):
    make_package(tmp_path, "mixbench", {"good": GOOD, "missed": MISSED, "broken": BROKEN})
    r = bench(tmp_path, "--quick", "--package", "mixbench", "--only", "good,miss")
    assert r.returncode == 1, r.stdout + r.stderr
    rows = table_rows(r.stdout)
    assert len(rows) == 2 and rows[1].rstrip().endswith("FAIL")
    r = bench(tmp_path, "--package", "mixbench", "--only", "nothing")
    assert r.returncode != 0 and "matches no module; available: broken, good, missed" in r.stderr


def test_real_package_lists_its_modules():
    names = runner.discover()
    assert "training_overhead" in names
    assert not {"table", "runner", "__main__"} & set(names)
    assert names == sorted(names, key=lambda n: (runner.ORDER + (n,)).index(n))
    # The whole command stays under 32 minutes, start-up of each child included (the
    # launch peers install torch into a fresh venv; the curves run 128 pods, 16 ranks).
    budgets = [
        runner.BUDGET_S.get(n, runner.DEFAULT_BUDGET_S) for n in set(names) | set(runner.ORDER)
    ]
    assert sum(budgets) <= 1920


def test_call_kwargs_matches_each_signature():
    def a(repeats, quick=False):
        return []

    def b(*, budget_s):
        return []

    def c(repeats, model):
        return []

    assert runner.call_kwargs(a, repeats=2, quick=True, budget_s=9) == {"repeats": 2, "quick": True}
    assert runner.call_kwargs(b, repeats=2, quick=True, budget_s=9) == {"budget_s": 9}
    with pytest.raises(TypeError, match="requires model"):
        runner.call_kwargs(c, repeats=2, quick=True, budget_s=9)


def test_formatting():
    assert fmt_number(151.287) == "151" and fmt_number(0.01234) == "0.012"
    assert fmt_number(262_144_000) == "262M" and fmt_number(3.0) == "3"
    assert fmt_number(7180.4) == "7180" and fmt_number(15_300) == "15.3k"
    assert fmt_number(1.534) == "1.53" and fmt_number(123.6) == "124"
    assert fmt_figure(2.0, (1.5, 2.5), "s") == "2 s (1.5–2.5)"
    assert fmt_figure(2.0, (2.0, 2.0), "") == "2"
    assert fmt_figure(0.62, (0.6201, 0.6203), "s") == "0.62 s"  # a range that reads the same
    assert fmt_figure(62_900_000, (968, 62_900_000), "B") == "62.9 MB (968 B–62.9 MB)"
    row = Row("a|b", "m", 1.0, 2.0, "base", "≥ 0.95×", False, "s", (1.0, 1.0), (2.0, 3.0))
    md = render_markdown([row])
    assert "a\\|b" in md and "0.5×" in md and "base: 2 s (2–3)" in md
    failed = runner.failed_row("image", "RegistryError: no registry")
    text = render_text([row, failed])
    assert text.splitlines()[-1] == "! image: RegistryError: no registry"
    assert math.isnan(failed.ours) and runner.exit_code([row, failed], []) == 2
    assert runner.exit_code([row], []) == 1 and runner.exit_code([row], ["x"]) == 2


def test_one_line_reason_names_the_place_in_the_repository():
    def fail():
        raise RuntimeError("(404)\nReason: Not Found\nHTTP response headers: many")

    try:
        fail()
    except RuntimeError as e:
        reason = runner.one_line(e)
    line = fail.__code__.co_firstlineno + 1
    assert reason == (
        f"RuntimeError: (404) Reason: Not Found (at tests/benchmarks/test_bench_runner.py:{line})"
    )
    assert runner.one_line(ValueError("x" * 500)).endswith("...")
    assert len(runner.one_line(ValueError("x" * 500))) == 300


def test_readme_section_is_replaced_between_the_markers(tmp_path):
    from benchmarks.__main__ import update_readme

    readme = tmp_path / "README.md"
    assert not update_readme(readme, "table")  # no file
    readme.write_text("# x\n\nno markers\n")
    assert not update_readme(readme, "table") and readme.read_text() == "# x\n\nno markers\n"
    readme.write_text(f"a\n{runner.README_START}\nold\n{runner.README_END}\nb\n")
    assert update_readme(readme, "\nnew table\n")
    assert update_readme(readme, "newer table")  # idempotent shape: markers stay
    assert readme.read_text() == f"a\n{runner.README_START}\nnewer table\n{runner.README_END}\nb\n"
