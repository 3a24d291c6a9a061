"""The runtime shim's PyTorch part: device, process group, DeepSpeed, teardown.

Shipped beside ``ddl_runtime.py`` in every replica and, like it, needs only the
standard library and torch (imported by the caller and passed in, so the setup can be
exercised against a stand-in where no GPU exists). Each process is bound to the GPU its
LOCAL_RANK names before any collective, and NCCL gets that device as ``device_id``:
without it NCCL guesses the device from the global rank, warns at every start, and can
hang when ranks and GPUs do not line up.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any


def setup_deepspeed(cuda: bool) -> None:
    """DeepSpeed reads the same env as DDP; on CPU it must be told its accelerator.
    Without deepspeed the job still runs as plain torch.distributed, and says so."""
    if importlib.util.find_spec("deepspeed") is None:
        msg = "jupyter-ddl: deepspeed is not installed; running as plain torch.distributed"
        print(msg + " (`import deepspeed` fails: `!pip install deepspeed`)", file=sys.stderr)
    elif not cuda:
        os.environ.setdefault("DS_ACCELERATOR", "cpu")


def mpi_rendezvous(env: dict[str, str]) -> dict[str, str]:
    """MASTER_ADDR and MASTER_PORT for ranks that mpirun started without them (a TrainJob
    on an MPI runtime: Trainer's deepspeed runtime names no rendezvous), found as
    DeepSpeed's own MPI discovery finds them: rank 0's address, sent to every rank over
    MPI (mpi4py, which the runtime's image ships)."""
    try:
        from mpi4py import MPI
    except ImportError:
        raise SystemExit(
            "jupyter-ddl: ranks started by mpirun have no MASTER_ADDR and no mpi4py to find "
            "rank 0 with; use an image with mpi4py (Trainer's deepspeed runtime image has it)"
        ) from None
    import socket

    comm = MPI.COMM_WORLD
    mine = None
    if comm.Get_rank() == 0:
        mine = socket.gethostbyname(socket.gethostname())
    addr = comm.bcast(mine, root=0)
    return {"MASTER_ADDR": str(addr), "MASTER_PORT": env.get("MASTER_PORT") or "29500"}


def accepts(fn: Any, name: str) -> bool:
    """Does ``fn`` take a keyword ``name``? (``device_id`` came with torch 2.3.)"""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


def init_kwargs(init: Any, backend: str, device: Any) -> dict[str, Any]:
    """Extra arguments for ``init_process_group``: the bound device for NCCL, when this
    torch accepts one."""
    if backend == "nccl" and getattr(device, "type", None) == "cuda" and accepts(init, "device_id"):
        return {"device_id": device}
    return {}


def setup_torch(
    torch: Any,
    env: dict[str, str],
    topo: dict[str, Any],
    *,
    self_init: bool,
    strategy: str = "",
    backend: str | None = None,
) -> dict[str, Any]:
    """Bind this process to its device and, unless the cell does it itself, start the
    process group. ``topo`` holds rank, world_size and local_rank; ``backend`` is the
    requested one (None: nccl with CUDA, else gloo). Returns the cell's ``device``."""
    dist = torch.distributed
    cuda = bool(torch.cuda.is_available())
    if strategy == "deepspeed":
        setup_deepspeed(cuda)
    backend = backend or ("nccl" if cuda else "gloo")
    local_rank = int(topo["local_rank"])
    if cuda:
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)  # before any collective: NCCL uses the current device
    else:
        device = torch.device("cpu")
    if "OMPI_COMM_WORLD_RANK" in env and "MASTER_ADDR" not in env:
        found = mpi_rendezvous(env)
        env.update(found)
        os.environ.update(found)
    distributed = "MASTER_ADDR" in env and "RANK" in env
    if distributed and not dist.is_initialized() and not self_init:
        dist.init_process_group(backend, **init_kwargs(dist.init_process_group, backend, device))
        _make_init_idempotent(dist)
    return {"device": device}


def _make_init_idempotent(dist: Any) -> None:
    # The shim initialised the group; a later init_process_group from code the AST
    # check could not see (an imported module) must not fail on "initialised twice".
    original = dist.init_process_group

    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        if dist.is_initialized():
            return None
        return original(*args, **kwargs)

    dist.init_process_group = init_process_group


def teardown_torch(dist: Any, ok: bool, wait: Callable[..., bool] | None = None) -> None:
    """Wait for every rank, then end the process group the cell left open. The barrier
    names this process's GPU on NCCL, which would otherwise guess it from the rank.
    ``wait(end, who)`` runs the barrier with a time limit (``ddl_runtime.wait_for_peers``);
    when the peers never come, the group is left as it is (destroying it could block
    too) and the process exits."""
    if not (getattr(dist, "is_available", lambda: False)() and dist.is_initialized()):
        return
    if ok:
        kwargs: dict[str, Any] = {}
        torch = sys.modules.get("torch")
        if dist.get_backend() == "nccl" and torch is not None and torch.cuda.is_available():
            kwargs["device_ids"] = [torch.cuda.current_device()]

        def barrier() -> None:
            dist.barrier(**kwargs)

        if wait is None:
            barrier()
        elif not wait(barrier, f"rank {dist.get_rank()}"):
            return
    dist.destroy_process_group()
