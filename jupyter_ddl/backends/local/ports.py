"""Free loopback ports for replicas, never handed to two live jobs at once.

Asking the OS for a free port and using it later is racy between concurrent jobs on
one machine: two supervisors could pick the same port before either binds it. So
every reservation goes through one table (``ports.json``) under an exclusive lock
file in the data directory; entries of jobs whose supervisor is gone are reclaimed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil


@contextlib.contextmanager
def _locked(data_dir: Path) -> Iterator[Path]:
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / "ports.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield data_dir / "ports.json"
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _load(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _alive(entry: dict[str, Any]) -> bool:
    pid = entry.get("pid")
    if not isinstance(pid, int) or not psutil.pid_exists(pid):
        return False
    try:
        return bool(abs(psutil.Process(pid).create_time() - entry.get("create_time", 0)) < 1.0)
    except psutil.Error:
        return False


def _free_port(taken: set[int]) -> int:
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        if port not in taken:
            return port
    raise OSError("no free loopback port found after 200 tries")


def reserve(data_dir: Path, job: str, count: int, owner_pid: int | None = None) -> list[int]:
    """``count`` distinct free ports for ``job``, recorded until :func:`release` or
    until the owner process (default: this one) is gone."""
    pid = owner_pid or os.getpid()
    with _locked(data_dir) as path:
        table = {k: v for k, v in _load(path).items() if _alive(v)}
        taken = {p for v in table.values() for p in v.get("ports", [])}
        ports: list[int] = []
        for _ in range(count):
            port = _free_port(taken)
            taken.add(port)
            ports.append(port)
        created = psutil.Process(pid).create_time()
        table[job] = {"pid": pid, "create_time": created, "ports": ports}
        path.write_text(json.dumps(table, sort_keys=True))
    return ports


def release(data_dir: Path, job: str) -> None:
    if not data_dir.is_dir():
        return  # deleted while the job ran (a throw-away data dir): nothing to make again
    with _locked(data_dir) as path:
        table = _load(path)
        if table.pop(job, None) is not None:
            path.write_text(json.dumps(table, sort_keys=True))


def reserved(data_dir: Path) -> dict[str, list[int]]:
    """Live reservations: job -> ports."""
    with _locked(data_dir) as path:
        return {k: v["ports"] for k, v in _load(path).items() if _alive(v)}
