"""Every benchmark module runs in quick mode (1 repeat) and yields its rows, each with
its baseline measured in the same run, and the rows render as the table. Nothing here
depends on how fast the machine is: each module runs in the runner's child mode with
no time budget (a loaded machine takes longer, never fails), and whether a target was
met is the timed run's business (`scripts/bench`), not the test suite's."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from benchmarks import runner
from benchmarks.table import COLUMNS, render_markdown
from jupyter_ddl.backends.local import warm

#: passed as the module's own ``budget_s`` (a module stops repeating early near it):
#: large enough never to cut a quick run short
NO_BUDGET_S = 10.0**6


@pytest.mark.slow
@pytest.mark.timeout(3600)  # a hang guard only: a hung module is a failure, slow is not
@pytest.mark.parametrize("name", runner.discover())
def test_benchmark_module_runs_and_yields_rows(name, tmp_path):
    result = tmp_path / "result.json"
    cmd = [sys.executable, "-m", "benchmarks.runner", "--child", f"{runner.PACKAGE}.{name}"]
    cmd += ["--result", str(result), "--repeats", "1", "--quick", "--budget", str(NO_BUDGET_S)]
    env = dict(os.environ, JUPYTER_DDL_DATA_DIR=str(tmp_path / "data"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(runner.ROOT), env.get("PYTHONPATH")]))
    try:
        r = subprocess.run(
            cmd, cwd=runner.ROOT, env=env, capture_output=True, text=True, start_new_session=True
        )
    finally:
        # a module whose jobs used this data dir leaves its spare waiting
        # local_warm_seconds for the next job, as a user's would: none comes here
        warm.stop_spares(warm.warm_dir(tmp_path / "data"))
    assert result.exists(), f"exit {r.returncode}: {(r.stdout + r.stderr)[-3000:]}"
    payload = json.loads(result.read_text())
    assert "error" not in payload, payload["error"]
    rows = [runner.row_from_dict(d) for d in payload["rows"]]
    assert rows, f"{name}: run() returned no rows"
    assert runner.contract_problems(rows) == []
    area = runner.area_of(name).split(",")[0]
    assert any(row.area.startswith(area) for row in rows), [row.area for row in rows]
    for row in rows:
        assert row.measure and row.baseline_name, row
        assert row.pending or math.isfinite(row.ours), row
    table = [ln for ln in render_markdown(rows).splitlines() if ln.startswith("| ")]
    assert table[0] == "| " + " | ".join(COLUMNS) + " |"
    assert all(len(ln.split(" | ")) == len(COLUMNS) for ln in table[1:])
