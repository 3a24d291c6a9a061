"""Processes the cell spawns itself ("spawn" start method) find the cell's functions.

Code written for one machine, such as the Ignite notebooks' ``idist.Parallel(backend=
"gloo", nproc_per_node=2)`` with the training function defined in the same cell, starts
fresh interpreters that unpickle that function from ``__mp_main__``. The bundle's
``main.py`` replays the cell's definitions there (``runtime/ddl_spawn.py``)."""

from __future__ import annotations

import re
import sys

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.runtime import ddl_spawn
from tests.local.conftest import lines, submit, wait
from tests.support import require

# The shape of the Ignite practice notebooks, unchanged: one machine, two processes.
IGNITE_SPAWN_CELL = """
import ignite.distributed as idist
import torch

SCALE = 10.0  # a top-level constant the spawned function reads


def training(local_rank, config):
    torch.manual_seed(0)  # the same start on both ranks
    model = idist.auto_model(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"])
    g = torch.Generator().manual_seed(idist.get_rank())  # each rank its own data
    x = torch.randn(32, 4, generator=g)
    for _ in range(5):
        loss = ((model(x) - SCALE * x.sum(1, keepdim=True)) ** 2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
    total = float(idist.all_reduce(idist.get_rank() + 1.0))
    weights = sum(p.detach().double().sum().item() for p in model.parameters())
    print(f"SPAWNED rank={idist.get_rank()} world={idist.get_world_size()} "
          f"local={local_rank} sum={total} weights={weights:.6f}", flush=True)
    report(rank=idist.get_rank(), weights=weights)


with idist.Parallel(backend="gloo", nproc_per_node=2) as parallel:
    parallel.run(training, {"lr": 0.01})
"""

_LINE = re.compile(r"SPAWNED rank=(\d) world=(\d) local=(\d) sum=(\S+) weights=(\S+)")


@pytest.mark.slow
def test_ignite_parallel_spawns_processes_with_a_function_defined_in_the_cell(backend):
    require.module("ignite")
    # One replica (a Master alone): the notebook's single machine.
    name = submit(backend, IGNITE_SPAWN_CELL, "ignite", {"Master": 1, "Worker": 0})
    status = wait(backend, name)
    log = lines(backend, name, "master-0")
    assert status.state.value == "Succeeded", (status.message, log[-20:])
    assert [r.id for r in status.replicas] == ["master-0"]
    found = sorted(m.groups() for t in log if (m := _LINE.search(t)))
    assert [(r, w, loc, s) for r, w, loc, s, _ in found] == [
        ("0", "2", "0", "3.0"),
        ("1", "2", "1", "3.0"),
    ]
    assert len({weights for *_, weights in found}) == 1, "the ranks' weights differ"
    assert not any("Can't get attribute" in t for t in log)
    # report() works from a spawned process too.
    raw = [line.text for line in backend.logs(name, replica="master-0", raw=True)]
    assert sum("@@ddl-metric@@" in t for t in raw) == 2  # report() lines: metrics, not log
    assert not any("@@ddl-metric@@" in t for t in log)


def test_a_spawned_child_replays_definitions_not_the_training(tmp_path, monkeypatch):
    cell = tmp_path / "cell.py"
    cell.write_text(
        "import math\n"
        "K = 3\n"
        "BAD = undefined_name + 1\n"  # needs what only the parent has: skipped
        "def f(x):\n    return K * x\n"
        "class C:\n    pass\n"
        "started = []\n"
        "started.append('training')\n"  # a call at top level: not replayed
        "for i in range(3):\n    started.append(i)\n"
        "if __name__ == '__main__':\n    started.append('main')\n",
        encoding="utf-8",
    )
    bundle = build_bundle("pass")
    for rel in ("ddl_runtime.py", "ddl_spawn.py"):
        (tmp_path / rel).write_bytes(bundle.files[rel])
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "ddl_runtime", raising=False)
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # define_cell rewraps stdout/stderr
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    namespace: dict = {"__name__": "__mp_main__"}
    skipped = ddl_spawn.define_cell(str(cell), namespace)
    assert skipped == ["BAD = undefined_name + 1"]
    assert namespace["f"](2) == 6 and namespace["math"].pi > 3
    assert isinstance(namespace["C"], type) and namespace["started"] == []
    assert callable(namespace["report"])


def test_main_py_defines_the_cell_only_in_a_spawned_child():
    main = build_bundle("x = 1").files["main.py"].decode()
    assert 'elif __name__ == "__mp_main__":' in main and "ddl_spawn.define_cell" in main
    imported = ddl_spawn.definitions("import os\nx = os.sep\nprint(x)\nwith open('f'): pass\n")
    assert [type(n).__name__ for n in imported] == ["Import", "Assign"]


def test_the_spawn_module_needs_only_the_standard_library():
    import ast

    tree = ast.parse(build_bundle("pass").files["ddl_spawn.py"])
    imported = {
        (n.module if isinstance(n, ast.ImportFrom) else n.names[0].name) or ""
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
    }
    assert imported == {"__future__", "ast", "typing", "ddl_runtime"}
