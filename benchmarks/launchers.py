"""Ways to start an N-rank gloo rendezvous from a terminal, timed (helpers, no ``run``).

Every way runs ranks that import torch, initialise the gloo process group and print
``READY``; the figure is seconds from the launch call to the last rank's READY.

- ``time_backend``: our ``LocalBackend.submit``; READY's time is the one the
  supervisor stamped when it read the line (so this is "ranks ready", without the
  notebook's event stream: see ``kernel.py`` for that);
- ``time_by_hand``: the same processes started with ``subprocess`` and the PyTorchJob
  environment (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE);
- ``time_torchrun``: ``torchrun --nproc-per-node N`` running the same script.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

READY = "DDL_READY"

# torch-ddp: the runtime shim has initialised the group before the cell runs.
CELL = f"print('{READY}', flush=True)\n"
BY_HAND = f"""\
import os
import torch.distributed as dist
dist.init_process_group("gloo")
print("{READY}", flush=True)
dist.barrier()
dist.destroy_process_group()
os._exit(0)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ready_script(directory: Path) -> Path:
    """The by-hand rank script, written once into ``directory``."""
    path = directory / "ready.py"
    path.write_text(BY_HAND)
    return path


def ddp_spec(name: str, world: int, **fields: object) -> object:
    from jupyter_ddl.models import JobSpec

    replicas = {"Master": 1, "Worker": world - 1}  # Worker 0: a default would add one
    return JobSpec(name=name, strategy="torch-ddp", replicas=replicas, **fields)  # type: ignore[arg-type]


def time_backend(root: Path, world: int, timeout: float = 120.0) -> float:
    """Seconds from ``submit`` to the supervisor reading every replica's READY."""
    from jupyter_ddl.backends.local import LocalBackend
    from jupyter_ddl.config import Config
    from jupyter_ddl.core.bundle import build_bundle

    # the bench measures up to 16 replicas on small machines too: the product's bound
    # (4 per core) would refuse them, and its refusal is tested elsewhere. Cold starts
    # only: the curve compares like with like (processes by hand); local_launch has the
    # warm path beside accelerate
    backend = LocalBackend(Config(local_max_processes=64, local_warm_seconds=0), root=root)
    name = f"bench-{uuid.uuid4().hex[:8]}"
    start = time.time()
    backend.submit(ddp_spec(name, world), build_bundle(CELL))  # type: ignore[arg-type]
    seen: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(seen) < world and time.monotonic() < deadline:
            for line in backend.logs(name):
                if line.text == READY and line.time is not None:
                    seen.setdefault(line.replica, line.time)
            time.sleep(0.02)
        if len(seen) < world:
            raise RuntimeError(f"{name}: only {sorted(seen)} printed within {timeout:.0f} s")
        return max(seen.values()) - start
    finally:
        backend.delete(name)


def first_lines(procs: list[subprocess.Popen[str]], start: float, expect: int) -> float:
    """Seconds until ``expect`` READY lines were read from the processes' stdout."""
    times: list[float] = []
    lock = threading.Lock()

    def pump(p: subprocess.Popen[str]) -> None:
        assert p.stdout is not None
        for line in p.stdout:
            # torchrun's ranks share one pipe, and unbuffered print() writes the text and
            # its newline separately: two ranks can land on one line ("DDL_READYDDL_READY").
            n = line.count(READY)
            if n:
                with lock:
                    times.extend([time.perf_counter()] * n)

    threads = [threading.Thread(target=pump, args=(p,), daemon=True) for p in procs]
    for t in threads:
        t.start()
    for p in procs:
        p.wait(timeout=120)
    for t in threads:
        t.join(timeout=5)
    if len(times) < expect:
        codes = [p.returncode for p in procs]
        raise RuntimeError(
            f"only {len(times)} of {expect} processes printed {READY} (exit codes {codes})"
        )
    return max(times) - start


def time_by_hand(script: Path, world: int) -> float:
    """A pair that fails to rendezvous (a port taken meanwhile) is retried once."""
    try:
        return _by_hand_once(script, world)
    except RuntimeError:
        return _by_hand_once(script, world)


def _by_hand_once(script: Path, world: int) -> float:
    port = str(free_port())
    start = time.perf_counter()
    procs = []
    for rank in range(world):
        env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
        env.update(RANK=str(rank), WORLD_SIZE=str(world), PYTHONUNBUFFERED="1")
        procs.append(
            subprocess.Popen(
                [sys.executable, str(script)], env=env, stdout=subprocess.PIPE, text=True
            )
        )
    return first_lines(procs, start, world)


def time_torchrun(script: Path, world: int) -> float:
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(world)]
    argv += ["--master-port", str(free_port()), str(script)]
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    return first_lines([proc], start, world)
