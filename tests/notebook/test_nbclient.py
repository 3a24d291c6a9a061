"""End to end: notebooks executed by nbclient in a real kernel, on the real local backend.

Each test writes a small notebook, runs it headless, and reads the saved notebook the
way a user would see it after an export: per-replica output, final state and chart.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.support import require

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

DDP_CELL = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
torch.manual_seed(0)
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 4), torch.randn(32, 1)
for step in range(STEPS):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    report(step=step, loss=loss.item())
print(f"rank {rank} of {world_size} done")
"""


@pytest.fixture
def kernel_env(data_dir, monkeypatch):
    """The kernel inherits the isolated data dir and finds this checkout's package."""
    require.module("nbclient")
    require.module("ipykernel")
    require.module("torch")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.delenv("JUPYTER_DDL_WIDGETS", raising=False)
    yield data_dir
    _cancel_everything()


def _cancel_everything() -> None:
    from jupyter_ddl.manager import JobManager

    m = JobManager()
    for job in m.list(backend="local"):
        if not job.state.finished:
            m.cancel(job.name, backend="local")
    m.close()


def execute(
    tmp_path: Path, cells: list[str], name: str, timeout: int = 240
) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    nbformat.write(nb, tmp_path / f"{name}.ipynb")
    return nbformat.read(tmp_path / f"{name}.ipynb", as_version=4)  # what was saved


def texts(cell, mime: str = "text/plain") -> str:
    out = []
    for o in cell.outputs:
        if o.output_type == "stream":
            out.append(o.text)
        elif mime in o.get("data", {}):
            out.append(o.data[mime])
    return "\n".join(out)


def test_wait_job_leaves_replica_output_state_and_chart_in_the_saved_notebook(kernel_env, tmp_path):
    nb = execute(
        tmp_path,
        [
            "%load_ext jupyter_ddl",
            "STEPS = 5",
            "%%distribute --strategy torch-ddp --replicas 2 --name nb-wait --wait\n" + DDP_CELL,
        ],
        "wait",
    )
    cell = nb.cells[2]
    plain, html = texts(cell), texts(cell, "text/html")
    assert "nb-wait" in plain and "Succeeded" in plain
    assert "[master-0] rank 0 of 2 done" in plain and "[worker-0] rank 1 of 2 done" in plain
    assert "master-0" in html and "worker-0" in html
    svgs = [html[html.index("<svg") : html.index("</svg>")]] if "<svg" in html else []
    assert len(svgs) == 1 and svgs[0].count("<polyline") == 2  # loss per replica, inline


def test_background_job_then_ddl_wait_and_attach_after_a_kernel_restart(kernel_env, tmp_path):
    nb = execute(
        tmp_path,
        [
            "%load_ext jupyter_ddl",
            "import time\nSTEPS = 3\nt0 = time.time()",
            "%%distribute --strategy torch-ddp --replicas 2 --name nb-bg\n"
            "import time\ntime.sleep(2)\n" + DDP_CELL,
            "returned_after = time.time() - t0\n"
            "from jupyter_ddl.manager import default_manager\n"
            "print('state while running:', default_manager().get('nb-bg', 'local').state.value)\n"
            "print(f'returned after {returned_after:.1f} s')",
            "%ddl wait nb-bg",
        ],
        "background",
    )
    during = texts(nb.cells[3])
    assert "state while running: Pending" in during or "state while running: Running" in during
    assert float(during.split("returned after ")[1].split(" s")[0]) < 5
    assert "Succeeded" in texts(nb.cells[4])
    # the dashboard's final output landed in the cell that started the job
    assert "[worker-0] rank 1 of 2 done" in texts(nb.cells[2])

    again = execute(
        tmp_path, ["%load_ext jupyter_ddl", "%ddl attach nb-bg", "%ddl wait nb-bg"], "restart"
    )
    attached = texts(again.cells[1])
    assert "Succeeded" in attached and "[master-0] rank 0 of 2 done" in attached  # logs replayed


def test_dry_run_prints_yaml_for_every_strategy(kernel_env, tmp_path):
    require.module("jupyter_ddl.manifests.dryrun")
    from jupyter_ddl.core.strategies import CATALOG

    flags = {"tf-tpu": "--tpus 4"}
    cells = ["%load_ext jupyter_ddl", "def helper():\n    return 1"]
    cells += [
        f"%%distribute --strategy {name} --name dry-{name} --dry-run {flags.get(name, '')}\nhelper()"
        for name in CATALOG
    ]
    nb = execute(tmp_path, cells, "dry", timeout=60)
    for name, cell in zip(CATALOG, nb.cells[2:], strict=True):
        out = texts(cell)
        assert f"name: dry-{name}" in out and "apiVersion:" in out and "def helper" in out, name
        assert f"kind: {CATALOG[name].kind}" in out, name
    assert not (kernel_env / "jobs").exists() or not any((kernel_env / "jobs").iterdir())


def test_flood_keeps_the_kernel_responsive_and_the_output_bounded(kernel_env, tmp_path):
    tail = 50
    flood = (
        "import sys, time\n"
        "start = time.time()\n"
        "n = 0\n"
        "while time.time() - start < 10:\n"
        "    for _ in range(20):\n"
        "        print(f'rank {rank} line {n} ' + 'x' * 40)\n"
        "        n += 1\n"
        "    sys.stdout.flush()\n"
        "    time.sleep(max(0.0, start + n / 2000 - time.time()))\n"
        "print(f'rank {rank} wrote {n} lines')\n"
    )
    nb = execute(
        tmp_path,
        [
            "%load_ext jupyter_ddl",
            f"%ddl config log_tail={tail}",
            "%%distribute --strategy torch-ddp --replicas 4 --name nb-flood\n" + flood,
            "import time\nfrom jupyter_ddl.manager import default_manager\n"
            "deadline = time.time() + 120\n"
            "while time.time() < deadline and sum(1 for _ in default_manager().logs('nb-flood', backend='local', tail=5)) < 20:\n"
            "    time.sleep(0.2)\n"
            "time.sleep(2)",
            "import time\nprobe = time.time()\nprint('responsive', sum(range(1000)))",
            "%ddl wait nb-flood",
        ],
        "flood",
        timeout=300,
    )
    probe = nb.cells[4].metadata.execution
    took = _seconds(probe["shell.execute_reply"]) - _seconds(probe["iopub.execute_input"])
    assert took < 1.0, f"a cell took {took:.2f} s during the flood"
    assert "Succeeded" in texts(nb.cells[5])
    for o in nb.cells[2].outputs:  # the saved output holds at most the tail per replica
        for text in o.get("data", {}).values():
            if isinstance(text, str):
                assert text.count(" line ") <= 4 * tail + 8
    widgets = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    for model in widgets.get("state", {}).values():
        value = model.get("state", {}).get("value")
        if isinstance(value, str):
            assert value.count(" line ") <= tail
    from jupyter_ddl.manager import JobManager

    m = JobManager()
    for rid in ("master-0", "worker-0", "worker-1", "worker-2"):
        lines = [ln.text for ln in m.logs("nb-flood", replica=rid)]
        wrote = int(lines[-1].split(" wrote ")[1].split()[0])
        assert wrote > 15_000 and sum(" line " in t for t in lines) == wrote  # all on disk


def _seconds(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
