"""The runtime shim binds each process to its GPU and hands NCCL that device.

There is no GPU here, so the CUDA path runs against a stand-in torch that records what
the shim asks of it; what a CPU torch can show (its real init_process_group signature)
is checked against the real one.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest

from jupyter_ddl.runtime import ddl_runtime_torch as rt
from tests.support import require


class _Device:
    def __init__(self, kind: str, index: int | None = None) -> None:
        self.type, self.index = kind, index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Device) and (self.type, self.index) == (other.type, other.index)

    def __repr__(self) -> str:
        return f"{self.type}:{self.index}"


def fake_torch(*, cuda: bool, device_id_param: bool = True, initialised: bool = False):
    """A torch with ``cuda`` GPUs or none, recording calls in ``.calls``."""
    calls: list[tuple] = []
    state = {"init": initialised, "current": 0}

    def init_new(backend=None, init_method=None, timeout=None, device_id=None):
        calls.append(("init_process_group", backend, device_id))
        state["init"] = True

    def init_old(backend=None, init_method=None, timeout=None):
        calls.append(("init_process_group", backend, None))
        state["init"] = True

    def set_device(d):
        calls.append(("set_device", d))
        state["current"] = d.index

    dist = SimpleNamespace(
        init_process_group=init_new if device_id_param else init_old,
        is_initialized=lambda: state["init"],
        is_available=lambda: True,
        get_backend=lambda: "nccl" if cuda else "gloo",
        barrier=lambda **kw: calls.append(("barrier", kw)),
        destroy_process_group=lambda: calls.append(("destroy",)),
    )
    cuda_ns = SimpleNamespace(
        is_available=lambda: cuda, set_device=set_device, current_device=lambda: state["current"]
    )
    return SimpleNamespace(device=_Device, cuda=cuda_ns, distributed=dist, calls=calls)


ENV = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1", "RANK": "3", "WORLD_SIZE": "4"}


def topo(local_rank: int) -> dict:
    return {"rank": 3, "world_size": 4, "local_rank": local_rank}


def test_nccl_gets_the_local_rank_device_after_set_device():
    torch = fake_torch(cuda=True)
    names = rt.setup_torch(torch, dict(ENV), topo(1), self_init=False)
    assert names["device"] == _Device("cuda", 1)
    assert torch.calls == [
        ("set_device", _Device("cuda", 1)),  # first: the collective runs on the current device
        ("init_process_group", "nccl", _Device("cuda", 1)),
    ]


def test_a_torch_without_device_id_still_initialises():
    torch = fake_torch(cuda=True, device_id_param=False)
    rt.setup_torch(torch, dict(ENV), topo(0), self_init=False)
    assert torch.calls[-1] == ("init_process_group", "nccl", None)


def test_gloo_and_cpu_get_no_device_id():
    on_gpu = fake_torch(cuda=True)
    rt.setup_torch(on_gpu, dict(ENV), topo(0), self_init=False, backend="gloo")
    assert on_gpu.calls[-1] == ("init_process_group", "gloo", None)
    cpu = fake_torch(cuda=False)
    assert rt.setup_torch(cpu, dict(ENV), topo(0), self_init=False)["device"] == _Device("cpu")
    assert cpu.calls == [("init_process_group", "gloo", None)]


def test_a_cell_that_initialises_itself_keeps_its_own_call_but_gets_its_device():
    torch = fake_torch(cuda=True)
    rt.setup_torch(torch, dict(ENV), topo(2), self_init=True)
    assert torch.calls == [("set_device", _Device("cuda", 2))]
    torch.distributed.init_process_group("nccl")  # the cell's own call, untouched
    assert torch.calls[-1] == ("init_process_group", "nccl", None)


def test_after_the_shim_initialised_a_second_init_is_a_no_op():
    torch = fake_torch(cuda=True)
    rt.setup_torch(torch, dict(ENV), topo(0), self_init=False)
    torch.distributed.init_process_group("nccl")  # e.g. from an imported module
    assert [c[0] for c in torch.calls].count("init_process_group") == 1


def test_teardown_barrier_names_the_gpu_on_nccl(monkeypatch):
    torch = fake_torch(cuda=True, initialised=True)
    torch.cuda.set_device(_Device("cuda", 1))
    monkeypatch.setitem(__import__("sys").modules, "torch", torch)
    rt.teardown_torch(torch.distributed, ok=True)
    assert torch.calls[-2:] == [("barrier", {"device_ids": [1]}), ("destroy",)]
    cpu = fake_torch(cuda=False, initialised=True)
    monkeypatch.setitem(__import__("sys").modules, "torch", cpu)
    rt.teardown_torch(cpu.distributed, ok=False)  # a failed cell: no barrier to hang in
    assert cpu.calls == [("destroy",)]


def test_the_real_torch_signature_takes_device_id():
    require.module("torch")
    import torch
    import torch.distributed as dist

    assert "device_id" in inspect.signature(dist.init_process_group).parameters
    dev = torch.device("cuda", 1)
    assert rt.init_kwargs(dist.init_process_group, "nccl", dev) == {"device_id": dev}
    assert rt.init_kwargs(dist.init_process_group, "gloo", dev) == {}
    assert rt.init_kwargs(dist.init_process_group, "nccl", torch.device("cpu")) == {}


@pytest.mark.parametrize("fn", [print, len])
def test_accepts_is_false_for_builtins_without_the_keyword(fn):
    assert not rt.accepts(fn, "device_id")
