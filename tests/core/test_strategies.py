"""Strategy facts live on ``Strategy``: callers ask it, never compare names."""

from __future__ import annotations

from jupyter_ddl.core.strategies import CATALOG


def test_only_the_parameter_server_strategy_has_servers():
    servers = {name: s.server_roles for name, s in CATALOG.items() if s.server_roles}
    assert servers == {"tf-parameter-server": frozenset({"PS", "Worker"})}


def test_torch_strategies_run_a_process_per_gpu_but_dataparallel():
    per_gpu = {name for name, s in CATALOG.items() if s.process_per_gpu}
    torch = {name for name, s in CATALOG.items() if s.framework == "pytorch"}
    assert per_gpu == torch - {"torch-dp"} and "torch-ddp" in per_gpu
    assert {name for name, s in CATALOG.items() if s.one_process} == {"torch-dp"}
