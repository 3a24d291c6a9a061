"""The real suite in quick mode (1 repeat): every module present runs, gives at least
one row, and every row has its baseline measured in the same run. Checks the table's
shape, not the figures (this machine is shared; the timed run is `scripts/bench`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from benchmarks import runner
from benchmarks.table import COLUMNS


@pytest.mark.slow
@pytest.mark.timeout(1560)
def test_quick_suite_over_every_module_present(tmp_path):
    names = runner.discover()
    out = tmp_path / "results.md"
    r = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--output", str(out)],
        cwd=runner.ROOT,
        env=dict(os.environ, PYTHONPATH=str(runner.ROOT)),
        capture_output=True,
        text=True,
        timeout=1500,
    )
    # 2 would mean a module failed or a row lacks a baseline; 1 only a missed target.
    assert r.returncode in (0, 1), r.stdout + r.stderr[-3000:]
    md = out.read_text()
    table = [ln for ln in md.splitlines() if ln.startswith("| ")]
    assert table[0] == "| " + " | ".join(COLUMNS) + " |"
    rows = [ln.split(" | ") for ln in table[1:]]
    assert all(len(cells) == len(COLUMNS) for cells in rows)
    areas = {cells[0].lstrip("| ") for cells in rows}
    for name in names:  # every module contributed a row under its area
        assert any(a.startswith(runner.area_of(name).split(",")[0]) for a in areas), name
    for cells in rows:
        baseline, ratio, result = cells[3], cells[4], cells[6].rstrip(" |")
        assert ":" in baseline and baseline.split(":", 1)[1].strip() != "–", cells
        assert result in ("pass", "FAIL", "n/a", "pending"), cells
        assert ratio.endswith("×") or ratio == "–", cells
    assert "quick run (1 repeats)" in md and "CPUs" in md
