"""``python -m jupyter_ddl.diagnostics.gpucheck``: does the local backend use this machine's GPUs right?

Runs real jobs on the local backend and prints a PASS/FAIL table (exit status 1 on any
FAIL): one replica of one GPU trains on ``cuda:0`` over NCCL for torch-ddp, ignite and
deepspeed, with no "Guessing device ID" warning in any log; a cell with its own
``init_process_group`` still runs; one replica more than there are GPUs is refused in
one line; ``torch-dp`` sees every GPU of its replica; a running job's resources show
its GPU's utilisation and memory (NVML or ``nvidia-smi``). Needs only this package, its
pure-Python dependencies and a CUDA torch (``scripts/gpu-check`` runs it from a
checkout; on a machine without a package index, ``pip install --no-deps --target DIR``
the wheels and set ``PYTHONPATH=DIR``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from jupyter_ddl.backends.local import LocalBackend
from jupyter_ddl.backends.local.gpus import detect_gpus
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.errors import DDLError, GpuCheckFailed, ResourceError
from jupyter_ddl.i18n import tr
from jupyter_ddl.notebook.args import parse_line, spec_from_args
from jupyter_ddl.present.state import format_resources
from jupyter_ddl.validation import validate

#: what NCCL logs when it has to guess a process's GPU (two wordings across versions)
GUESS_WARNINGS = re.compile(
    r"Guessing device ID|device(s)? used by this process (is|are) currently unknown", re.I
)

TRAIN = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
assert device.type == "cuda", device
model = DDP(torch.nn.Linear(64, 1).to(device), device_ids=[device.index])
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(256, 64, device=device)
y = x.sum(1, keepdim=True)
losses = []
for step in range(50):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    losses.append(loss.item())
print(f"GPUCHECK device={device} backend={dist.get_backend()} world={dist.get_world_size()} "
      f"first={losses[0]:.4f} last={losses[-1]:.4f}", flush=True)
"""

OWN_INIT = """
import os, torch, torch.distributed as dist
dist.init_process_group("nccl")
t = torch.ones(1, device=f"cuda:{int(os.environ['LOCAL_RANK'])}")
dist.all_reduce(t)
print(f"GPUCHECK own-init backend={dist.get_backend()} sum={int(t.item())}", flush=True)
dist.destroy_process_group()
"""

DP = """
import os, torch
net = torch.nn.DataParallel(torch.nn.Linear(8, 1).cuda())
out = net(torch.randn(64, 8).cuda())
print(f"GPUCHECK dp visible={os.environ.get('CUDA_VISIBLE_DEVICES')} "
      f"count={torch.cuda.device_count()} used={len(net.device_ids)} out={tuple(out.shape)}",
      flush=True)
"""

BUSY = """
import time, torch
x = torch.randn(4096, 4096, device=device)
print(f"GPUCHECK busy on {device}", flush=True)
end = time.time() + 60
while time.time() < end:
    x = x @ x
    x = x / x.norm()
torch.cuda.synchronize()
"""

Row = tuple[str, str, str]  # check, PASS | FAIL | SKIP, detail


class Checker:
    def __init__(self, timeout: float) -> None:
        self.backend = LocalBackend()
        self.gpus = detect_gpus()
        self.timeout = timeout
        self.rows: list[Row] = []

    def job(self, flags: str, code: str) -> tuple[str, list[str]]:
        """Run ``flags`` (as ``%%distribute`` takes them) on ``code``; (state, log lines)."""
        name = f"gpucheck-{os.urandom(3).hex()}"
        # no restarts: a failure shows at once, not after the backoff limit
        line = f"{flags} --backoff-limit 0"
        spec = spec_from_args(parse_line(line), name=name, backend="local")
        validate(spec)
        self.backend.submit(spec, build_bundle(code))
        deadline = time.monotonic() + self.timeout
        status = self.backend.get(name)
        while not status.state.finished and time.monotonic() < deadline:
            time.sleep(0.5)
            status = self.backend.get(name)
        if not status.state.finished:
            self.backend.cancel(name)
        lines = [f"{ln.replica}: {ln.text}" for ln in self.backend.logs(name)]
        state = status.state.value + (f" ({status.message})" if status.message else "")
        return state, lines

    def run(self, check: str, fn: Callable[[], str]) -> None:
        try:
            self.rows.append((check, "PASS", fn()))
        except GpuCheckFailed as e:
            self.rows.append((check, "FAIL", str(e)))
        except DDLError as e:
            self.rows.append((check, "FAIL", f"{type(e).__name__}: {e}"))

    # -- the checks ------------------------------------------------------------------
    def single_gpu(self, strategy: str) -> str:
        state, lines = self.job(f"--strategy {strategy} --replicas 1 --gpus 1", TRAIN)
        found = _line(lines, "GPUCHECK device=")
        m = re.search(r"device=(\S+) backend=(\S+) world=(\d+) first=(\S+) last=(\S+)", found)
        if not state.startswith("Succeeded") or m is None:
            raise GpuCheckFailed(f"job {state}; last lines: {' | '.join(lines[-3:])}")
        device, backend, world, first, last = m.groups()
        _expect((device, backend, world) == ("cuda:0", "nccl", "1"), found)
        _expect(float(last) < float(first), f"loss did not fall: {first} -> {last}")
        _no_guessing(lines)
        return f"cuda:0 over nccl, world 1, loss {first} -> {last}, no device guess"

    def own_init(self) -> str:
        state, lines = self.job("--strategy torch-ddp --replicas 1 --gpus 1", OWN_INIT)
        found = _line(lines, "GPUCHECK own-init")
        _expect(state.startswith("Succeeded") and "backend=nccl sum=1" in found, state)
        return "its own init_process_group('nccl') ran"

    def refused(self) -> str:
        n = len(self.gpus)
        flags = f"--strategy torch-ddp --replicas {n + 1} --gpus 1"
        try:
            self.job(flags, "x = 1")
        except ResourceError as e:
            text = str(e)
            _expect("\n" not in text and f"asks for {n + 1} GPUs" in text, text)
            _expect(f"this machine has {n}" in text, text)
            return f"{flags}: {text}"
        raise GpuCheckFailed(f"{flags} was accepted on a machine with {n} GPU(s)")

    def gpu_resources(self) -> str:
        """A job that keeps its GPU busy: its status's resources (what `%ddl status`, the
        dashboard and the REST replica JSON show) carry the GPU's utilisation and memory."""
        name = f"gpucheck-{os.urandom(3).hex()}"
        flags = "--strategy torch-ddp --replicas 1 --gpus 1 --backoff-limit 0"
        self.backend.submit(
            spec_from_args(parse_line(flags), name=name, backend="local"), build_bundle(BUSY)
        )
        deadline = time.monotonic() + self.timeout
        try:
            while time.monotonic() < deadline:
                status = self.backend.get(name)
                for r in status.replicas:
                    used = r.resources
                    if "gpu_util_percent" in used and used.get("gpu_memory_mb"):
                        return f"{r.id}: {format_resources(used)}"
                if status.state.finished:
                    raise GpuCheckFailed(
                        f"job {status.state.value} before its GPU showed: {status.message}"
                    )
                time.sleep(1.0)
            raise GpuCheckFailed(
                "the running job's resources never showed GPU utilisation and memory"
            )
        finally:
            self.backend.cancel(name)

    def dp_sees_all(self) -> str:
        n = len(self.gpus)
        state, lines = self.job(f"--strategy torch-dp --gpus {n}", DP)
        found = _line(lines, "GPUCHECK dp")
        want = f"count={n} used={n}"
        _expect(state.startswith("Succeeded") and want in found, f"{state}: {found}")
        return found.split("GPUCHECK dp ", 1)[1]


def _expect(ok: bool, detail: str) -> None:
    if not ok:
        raise GpuCheckFailed(detail)


def _line(lines: list[str], marker: str) -> str:
    found = next((line for line in lines if marker in line), None)
    if found is None:
        raise GpuCheckFailed(f"no {marker!r} line; last lines: {' | '.join(lines[-3:])}")
    return found


def _no_guessing(lines: list[str]) -> None:
    guessed = [line for line in lines if GUESS_WARNINGS.search(line)]
    _expect(not guessed, f"NCCL guessed the device: {guessed[0] if guessed else ''}")


def table(rows: list[Row]) -> str:
    width = max(len(r[0]) for r in rows)
    out = [f"{'check'.ljust(width)}  result  detail", f"{'-' * width}  ------  ------"]
    out += [f"{c.ljust(width)}  {r.ljust(6)}  {d}" for c, r, d in rows]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="gpu-check", description=__doc__.split("\n\n")[0])
    p.add_argument("--timeout", type=float, default=300, help=tr("seconds per job (300)"))
    p.add_argument("--keep", action="store_true", help=tr("keep the job directories"))
    args = p.parse_args(argv)
    data = Path(tempfile.mkdtemp(prefix="ddl-gpucheck-"))
    os.environ["JUPYTER_DDL_DATA_DIR"] = str(data)
    checker = Checker(args.timeout)
    if not checker.gpus:
        checker.rows.append(("GPUs visible", "FAIL", "nvidia-smi lists none"))
    else:
        checker.rows.append(("GPUs visible", "PASS", ", ".join(checker.gpus)))
        for strategy in ("torch-ddp", "ignite", "deepspeed"):
            checker.run(f"{strategy} --replicas 1 --gpus 1", partial(checker.single_gpu, strategy))
        checker.run("own init_process_group", checker.own_init)
        checker.run("one replica too many", checker.refused)
        checker.run("torch-dp sees every GPU", checker.dp_sees_all)
        checker.run("resources show the GPU's utilisation and memory", checker.gpu_resources)
    print(table(checker.rows))
    if args.keep:
        print(f"job directories: {data}")
    else:
        shutil.rmtree(data, ignore_errors=True)
    return 0 if all(r[1] == "PASS" for r in checker.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
