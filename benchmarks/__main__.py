"""``python3 -m benchmarks``: run every benchmark, print one table, write RESULTS.md.

Options: ``--quick`` (1 repeat, for checking the harness), ``--only AREA`` (module
name or prefix, repeatable or comma-separated), ``--repeats N``, ``--budget S`` (cap
each module's time budget), ``--output PATH``, ``--readme`` (also put the table
between the benchmark markers in README.md), ``--list``. A full run of every module
writes ``benchmarks/RESULTS.md``; quick or filtered runs write a file only when
``--output`` names one, so a partial table never replaces the published one.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from benchmarks import runner
from benchmarks.table import Row, render_markdown, render_text

RESULTS = runner.ROOT / "benchmarks" / "RESULTS.md"
README = runner.ROOT / "README.md"
NOTE = (
    "Each figure is the median of the repeats, min–max in brackets; each baseline is "
    "measured in the same run as the figure beside it, and ratio = ours / baseline. These "
    "machines are shared and noisy: compare ratios, not absolute figures."
)


def machine() -> str:
    """CPU count and model, memory, OS, Python and torch, load average now."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "? GiB"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    try:
        torch = f", torch {version('torch')}"
    except PackageNotFoundError:
        torch = ""
    return (
        f"{os.cpu_count()} CPUs ({model}), {mem} memory, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}{torch}"
    )


def load() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


def markdown_report(rows: list[Row], problems: list[str], *, header: str) -> str:
    body = render_markdown(rows)
    if problems:
        body += "\n\nRows without a baseline:\n\n" + "\n".join(f"- {p}" for p in problems)
    return f"{header}\n\n{body}\n\n{NOTE}\n"


def update_readme(readme: Path, section: str) -> bool:
    """Replace the text between the benchmark markers; False when they are absent."""
    if not readme.exists():
        return False
    text = readme.read_text()
    start, end = text.find(runner.README_START), text.find(runner.README_END)
    if start < 0 or end < start:
        return False
    start += len(runner.README_START)
    readme.write_text(text[:start] + "\n" + section.strip() + "\n" + text[end:])
    return True


def keep_logs(workdir: Path, *, failed: bool) -> None:
    """Keep the modules' logs when one failed (the reasons point there); else clean up."""
    for data in workdir.glob("*-data"):
        shutil.rmtree(data, ignore_errors=True)
    if failed:
        print(f"module logs kept in {workdir}", file=sys.stderr)
    else:
        shutil.rmtree(workdir, ignore_errors=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python3 -m benchmarks", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="1 repeat: checks the harness")
    p.add_argument("--only", action="append", default=[], metavar="AREA")
    p.add_argument("--repeats", type=int, help="repeats per module (default 5, quick 1)")
    p.add_argument("--budget", type=float, metavar="S", help="cap every module's time budget")
    p.add_argument("--output", type=Path, help="markdown file to write")
    p.add_argument("--readme", action="store_true", help="also update README.md's table")
    p.add_argument("--list", action="store_true", help="list the benchmark modules and exit")
    p.add_argument("--package", default=runner.PACKAGE, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def run_all(names: list[str], args: argparse.Namespace, repeats: int) -> list[Row]:
    """Each module in its child process, one after the other; progress on stderr."""
    rows: list[Row] = []
    workdir = Path(tempfile.mkdtemp(prefix="ddl-bench-"))
    for i, name in enumerate(names, 1):
        budget = runner.BUDGET_S.get(name, runner.DEFAULT_BUDGET_S)
        budget = min(budget, args.budget) if args.budget else budget
        print(f"[{i}/{len(names)}] {name} (budget {budget} s) ...", file=sys.stderr, flush=True)
        t = time.monotonic()
        got = runner.run_module(
            name,
            package=args.package,
            repeats=repeats,
            quick=args.quick,
            budget_s=budget,
            workdir=workdir,
        )
        state = "failed" if any(r.error for r in got) else f"{len(got)} rows"
        print(f"      {time.monotonic() - t:.0f} s, {state}", file=sys.stderr, flush=True)
        rows += got
    keep_logs(workdir, failed=any(r.error for r in rows))
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    names = runner.discover(args.package)
    if args.list:
        for n in names:
            budget = runner.BUDGET_S.get(n, runner.DEFAULT_BUDGET_S)
            print(f"{n:20} {runner.area_of(n)} (budget {budget} s)")
        return 0
    only = [o for item in args.only for o in item.split(",")]
    chosen = runner.select(names, only)
    repeats = args.repeats or (runner.QUICK_REPEATS if args.quick else runner.REPEATS)
    started, load_start, t0 = datetime.now(timezone.utc), load(), time.monotonic()
    rows = run_all(chosen, args, repeats)
    problems = runner.contract_problems(rows)
    header = (
        f"# Benchmark results\n\n`python3 -m benchmarks{' --quick' if args.quick else ''}` — "
        f"{started:%Y-%m-%d %H:%M} UTC, {'quick' if args.quick else 'full'} run "
        f"({repeats} repeats), {time.monotonic() - t0:.0f} s.\n\nMachine: {machine()}; "
        f"load average {load_start} at start, {load()} at end."
    )
    print(render_text(rows))
    for p in problems:
        print(f"! {p}")
    report = markdown_report(rows, problems, header=header)
    output = args.output or (RESULTS if not args.quick and not only else None)
    if output:
        output.write_text(report)
        print(f"written: {output}", file=sys.stderr)
    if args.readme and not update_readme(README, report.replace("# Benchmark results", "", 1)):
        print(f"README.md has no {runner.README_START} marker; not updated", file=sys.stderr)
    return runner.exit_code(rows, problems)


if __name__ == "__main__":
    sys.exit(main())
