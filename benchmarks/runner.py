"""Runs every benchmark module and prints one table: ``python3 -m benchmarks``.

A benchmark module is any module of the package that defines a top-level ``run``
function returning ``list[benchmarks.table.Row]``. Each one runs in its own child
process (its own session), with a time budget: a module that raises, hangs or
crashes becomes one ERROR row with a one-line reason instead of a traceback wall or a
stuck suite, and whatever processes it left in its group are killed. Modules run one
after the other so no two benchmarks compete for the CPUs.

Exit status: 0 every target met, 1 a target missed, 2 a module failed or a row has no
baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import importlib.util
import inspect
import json
import math
import os
import pkgutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from benchmarks.table import Row

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "benchmarks"
NOT_BENCHMARKS = {"table", "runner", "__main__"}
# Table order is fixed; modules not named here come after, alphabetically.
ORDER = (
    "image",
    "local_launch",
    "warm_sequence",
    "warm_tensorflow",
    "local_scale",
    "log_streaming",
    "k8s_logs",
    "k8s_scale",
    "training_overhead",
)
AREAS = {
    "image": "image",
    "local_launch": "local launch, 2-rank gloo rendezvous",
    "warm_sequence": "warm availability, a realistic sequence",
    "warm_tensorflow": "TensorFlow warm path, 2-worker MWMS",
    "k8s_submit": "Kubernetes submit, API double 50 ms away",
    "local_scale": "local backend, as replicas grow",
    "log_streaming": "log streaming, local",
    "k8s_logs": "log streaming, Kubernetes API double",
    "k8s_scale": "following pods, Kubernetes API double",
    "training_overhead": "training overhead",
}
# Seconds per module (caps: a full run takes about half), 31.5 minutes together. Modules whose
# run() takes ``budget_s`` fit their repeats in. local_launch starts two kernels and
# the Kubeflow Trainer SDK pip-installs torch into a fresh venv (once per run).
BUDGET_S = {
    "image": 130,
    "local_launch": 300,
    "local_scale": 300,
    "log_streaming": 75,
    "k8s_logs": 90,
    "k8s_scale": 240,
    "training_overhead": 360,  # four rows from two series of runs; the first-job runs train ~10 s each
    "warm_sequence": 190,  # its gaps shrink to fit (see warm_sequence.fit)
    "k8s_submit": 55,
    "warm_tensorflow": 150,  # a TensorFlow spare's import, then 3 ways per repeat
}
DEFAULT_BUDGET_S = 90
REPEATS = 5
QUICK_REPEATS = 1
README_START, README_END = "<!-- benchmarks:start -->", "<!-- benchmarks:end -->"


# -- discovery (no imports: a broken module must not break the listing) ------------
def discover(package: str = PACKAGE) -> list[str]:
    """Names of the package's modules that define a top-level ``run`` function."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"benchmarks: package {package!r} not found; run from the repository root")
    found = []
    for info in pkgutil.iter_modules(list(spec.submodule_search_locations)):
        if info.name in NOT_BENCHMARKS or info.name.startswith("_") or info.ispkg:
            continue
        path = Path(info.module_finder.path) / f"{info.name}.py"  # type: ignore[union-attr]
        if path.exists() and _defines_run(path):
            found.append(info.name)
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(found, key=lambda n: (rank.get(n, len(ORDER)), n))


def _defines_run(path: Path) -> bool:
    try:
        tree = ast.parse(path.read_text(), str(path))
    except (OSError, SyntaxError, ValueError):
        return True  # let the child report the real error as a failed row
    return any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in tree.body)


def select(names: list[str], only: list[str]) -> list[str]:
    """The modules ``--only`` asks for (name or prefix; '-', ' ' and '_' alike)."""
    if not only:
        return names
    norm = [o.strip().lower().replace("-", "_").replace(" ", "_") for o in only if o.strip()]
    chosen = [n for n in names if any(n == o or n.startswith(o) for o in norm)]
    if not chosen:
        raise SystemExit(
            f"benchmarks: --only {', '.join(only)} matches no module; available: {', '.join(names)}"
        )
    return chosen


def area_of(name: str) -> str:
    return AREAS.get(name, name.replace("_", " "))


# -- the child: import one module, call run(), write its rows as JSON ---------------
def call_kwargs(func: Any, *, repeats: int, quick: bool, budget_s: float) -> dict[str, Any]:
    """The arguments ``run`` accepts among repeats/quick/budget_s (modules differ)."""
    offered = {"repeats": repeats, "quick": quick, "budget_s": budget_s}
    params = inspect.signature(func).parameters
    kwargs = {k: v for k, v in offered.items() if k in params}
    needed = [
        p.name
        for p in params.values()
        if p.default is p.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and p.name not in kwargs
    ]
    if needed:
        raise TypeError(f"run() requires {', '.join(needed)}, which the runner does not supply")
    return kwargs


def one_line(error: BaseException) -> str:
    """``Class: message (at file:line)``, at most 300 characters.

    The message's first line, plus its second when the first says little (the
    kubernetes client's is just "(404)"); the place is the last traceback frame in
    this repository, which is where a maintainer starts looking."""
    text = [ln.strip() for ln in str(error).splitlines() if ln.strip()]
    message = " ".join(text[:2]) if text and len(text[0]) < 40 else (text[0] if text else "")
    line = f"{type(error).__name__}: {message}" if message else type(error).__name__
    frames = [f for f in traceback.extract_tb(error.__traceback__) if _in_repo(f.filename)]
    if frames:
        where = f" (at {Path(frames[-1].filename).resolve().relative_to(ROOT)}:{frames[-1].lineno})"
        line = line[: 300 - len(where)] + where
    return line if len(line) <= 300 else line[:297] + "..."


def _in_repo(filename: str) -> bool:
    path = Path(filename).resolve()
    return path.is_relative_to(ROOT) and path.name != "runner.py"


def child_main(module: str, result: Path, repeats: int, quick: bool, budget_s: float) -> int:
    try:
        run = importlib.import_module(module).run
        rows = run(**call_kwargs(run, repeats=repeats, quick=quick, budget_s=budget_s))
        if not isinstance(rows, list) or not all(dataclasses.is_dataclass(r) for r in rows):
            raise TypeError("run() must return a list of benchmarks.table.Row")
        payload: dict[str, Any] = {"rows": [dataclasses.asdict(r) for r in rows]}  # type: ignore[arg-type]
        code = 0
    except BaseException as e:  # noqa: BLE001 - the one place that turns any failure into a row
        payload, code = {"error": one_line(e)}, 1
    result.write_text(json.dumps(payload))
    return code


def row_from_dict(d: dict[str, Any]) -> Row:
    known = {f.name for f in dataclasses.fields(Row)}
    d = {k: v for k, v in d.items() if k in known}
    for key in ("ours_range", "baseline_range"):
        if d.get(key) is not None:
            d[key] = tuple(d[key])
    return Row(**d)


def failed_row(name: str, reason: str) -> Row:
    return Row(
        area=area_of(name),
        measure=f"benchmarks/{name}.py",
        ours=math.nan,
        baseline=None,
        baseline_name="",
        target="",
        passed=False,
        error=reason,
    )


# -- the parent: one child per module, under its budget ------------------------------
def run_module(
    name: str, *, package: str, repeats: int, quick: bool, budget_s: float, workdir: Path
) -> list[Row]:
    """Run one module in a child process; its rows, or one failed row."""
    result, log = workdir / f"{name}.json", workdir / f"{name}.log"
    cmd = [sys.executable, "-m", "benchmarks.runner", "--child", f"{package}.{name}"]
    cmd += ["--result", str(result), "--repeats", str(repeats), "--budget", str(budget_s)]
    cmd += ["--quick"] if quick else []
    env = dict(os.environ, JUPYTER_DDL_DATA_DIR=str(workdir / f"{name}-data"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            proc.wait(timeout=budget_s)
        except subprocess.TimeoutExpired:
            return [failed_row(name, f"exceeded its {budget_s:.0f} s budget (log: {log})")]
        finally:
            _kill_group(proc)
    if result.exists():
        payload = json.loads(result.read_text())
        if "error" in payload:
            return [failed_row(name, payload["error"])]
        rows = [row_from_dict(r) for r in payload["rows"]]
        return rows or [failed_row(name, "run() returned no rows")]
    return [failed_row(name, f"child exited {proc.returncode}: {_last_line(log)}")]


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """End the child and anything it left in its process group."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:
            time.sleep(0.2)  # grandchildren get a moment to exit before SIGKILL
    if proc.poll() is None:
        proc.wait()


def _last_line(log: Path) -> str:
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no output)"
    return lines[-1].strip()[:300] if lines else "(no output)"


def contract_problems(rows: list[Row]) -> list[str]:
    """Rows that break the suite's rule: a baseline measured in the same run."""
    out = []
    for r in rows:
        if r.error:
            continue
        if r.pending:  # a slot: no figure of ours yet, by design
            if r.baseline is None or not math.isfinite(r.baseline) or not r.baseline_name:
                out.append(f"{r.area} / {r.measure}: no baseline measured in this run")
            continue
        if r.baseline is None or not math.isfinite(r.baseline) or not r.baseline_name:
            out.append(f"{r.area} / {r.measure}: no baseline measured in this run")
        if not math.isfinite(r.ours):
            out.append(f"{r.area} / {r.measure}: no figure of ours")
    return out


def exit_code(rows: list[Row], problems: list[str]) -> int:
    if problems or any(r.error for r in rows):
        return 2
    return 1 if any(r.passed is False for r in rows) else 0


if __name__ == "__main__":
    # Child mode only; the suite itself starts through ``python3 -m benchmarks``.
    p = argparse.ArgumentParser(prog="benchmarks.runner")
    p.add_argument("--child", required=True)
    p.add_argument("--result", type=Path, required=True)
    p.add_argument("--repeats", type=int, default=REPEATS)
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S)
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    sys.exit(child_main(a.child, a.result, a.repeats, a.quick, a.budget))
