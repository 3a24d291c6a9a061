"""The job directory: everything needed to list, inspect, re-attach to and clean up a
local job, on disk, so jobs outlive the kernel that submitted them.

Layout under ``<data dir>/jobs/<name>/``::

    spec.json         the JobSpec (secret values are never in it: names only)
    handle.json       the JobHandle
    bundle/           the CodeBundle's files (main.py, cell.py, ddl_runtime.py, ddl_spawn.py)
    requirements.txt  the bundle's requirements, when there are any
    local.json        {"cwd": ..., "python": ...}: where replicas start and with what
    status.json       the JobStatus, rewritten atomically by the supervisor
    supervisor.json   {"pid": ..., "create_time": ...} of the supervisor process
    supervisor.log    the supervisor's own output (tracebacks of our bugs land here)
    setup.log         pip output when requirements are installed
    hostfile          the MPI hostfile (MPI strategies)
    cancel            present once a cancel was asked for
    logs/<replica>.log  one file per replica: "<UTC time> <stream> <text>" per line
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...models import CodeBundle, JobHandle, JobSpec, JobStatus

#: the supervisor's own import path entry, taken off again for the replicas
SUPERVISOR_PATH_ENV = "JUPYTER_DDL_SUPERVISOR_PATH"


def jobs_root(data_dir: Path) -> Path:
    return data_dir / "jobs"


def write_atomic(path: Path, data: bytes) -> None:
    """Write via a temporary file and rename, so readers never see half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_json(path: Path, value: Any) -> None:
    write_atomic(path, json.dumps(value, indent=1, sort_keys=True).encode())


def read_json(path: Path) -> Any | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# The supervisor stamps and the watchers parse every line (thousands per second), so
# both cache the part of the stamp that rarely changes: strptime/strftime on every line
# cost more than the rest of the log path together.
_second_stamp: tuple[int, str] = (-1, "")  # (UTC second, "YYYY-MM-DDTHH:MM:SS")
_second_epoch: tuple[str, int] = ("", 0)  # ("YYYY-MM-DDTHH:MM:SS", its epoch seconds)


def format_log_line(t: float, stream: str, text: str) -> str:
    """One timestamped log line: ``2026-11-21T23:40:01.123456Z stdout text``."""
    global _second_stamp
    # split as datetime.fromtimestamp does (modf, then round half even): same digits
    frac, whole = math.modf(t)
    sec, micro = int(whole), round(frac * 1e6)
    if micro >= 1_000_000:
        sec, micro = sec + 1, micro - 1_000_000
    elif micro < 0:
        sec, micro = sec - 1, micro + 1_000_000
    cached = _second_stamp
    if cached[0] != sec:
        stamp = datetime.fromtimestamp(sec, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
        cached = _second_stamp = (sec, stamp)
    return f"{cached[1]}.{micro:06d}Z {stream} {text}\n"


def parse_log_line(line: str) -> tuple[float | None, str, str]:
    """(time, stream, text) of a stored line; foreign lines come back as stdout text."""
    line = line.rstrip("\n")
    parts = line.split(" ", 2)
    if len(parts) >= 2 and parts[0].endswith("Z"):
        stamp = parse_stamp(parts[0])
        if stamp is None:
            return None, "stdout", line
        return stamp, parts[1], parts[2] if len(parts) == 3 else ""
    return None, "stdout", line


def parse_log_lines(raws: list[str]) -> list[tuple[float | None, str, str]]:
    """``parse_log_line`` of each line (same results), for a reader's whole batch: a
    line stamped in the same second as the one before costs one split and one int()."""
    out: list[tuple[float | None, str, str]] = []
    head, base = "\0", 0  # the last fast-parsed "YYYY-MM-DDTHH:MM:SS", its epoch in µs
    for raw in raws:
        parts = raw.split(" ", 2)
        stamp = parts[0]
        if len(parts) == 3 and stamp[:19] == head and len(stamp) == 27 and stamp[26] == "Z":
            micro = stamp[20:26]
            if stamp[19] == "." and micro.isascii() and micro.isdigit():
                out.append(((base + int(micro)) / 1_000_000, parts[1], parts[2]))
                continue
        item = parse_log_line(raw)
        out.append(item)
        cached = _second_epoch
        if item[0] is not None and cached[0] == stamp[:19]:
            head, base = cached[0], cached[1] * 1_000_000
    return out


def parse_stamp(stamp: str) -> float | None:
    """Epoch seconds of ``2026-11-21T23:40:01.123456Z`` (None when it is not one).

    The fast path gives exactly what ``datetime.timestamp()`` gives (whole
    microseconds divided once), so both paths agree to the bit.
    """
    global _second_epoch
    if len(stamp) == 27 and stamp[19] == "." and stamp[26] == "Z":
        micro = stamp[20:26]
        if micro.isascii() and micro.isdigit():
            head = stamp[:19]
            cached = _second_epoch
            if cached[0] != head:
                try:
                    second = datetime.strptime(head, "%Y-%m-%dT%H:%M:%S")
                except ValueError:
                    return None
                cached = _second_epoch = (head, _epoch(second))
            return (cached[1] * 1_000_000 + int(micro)) / 1_000_000
    try:
        t = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError:
        return None
    return t.replace(tzinfo=timezone.utc).timestamp()


def _epoch(t: datetime) -> int:
    return int(t.replace(tzinfo=timezone.utc).timestamp())


class JobDir:
    """Paths and small reads/writes of one job's directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.name = root.name

    spec_path = property(lambda self: self.root / "spec.json")
    handle_path = property(lambda self: self.root / "handle.json")
    status_path = property(lambda self: self.root / "status.json")
    supervisor_path = property(lambda self: self.root / "supervisor.json")
    supervisor_log = property(lambda self: self.root / "supervisor.log")
    setup_log = property(lambda self: self.root / "setup.log")
    cancel_path = property(lambda self: self.root / "cancel")
    bundle_dir = property(lambda self: self.root / "bundle")
    logs_dir = property(lambda self: self.root / "logs")
    hostfile = property(lambda self: self.root / "hostfile")
    requirements_path = property(lambda self: self.root / "requirements.txt")

    def log_path(self, replica: str) -> Path:
        return self.logs_dir / f"{replica}.log"

    def exists(self) -> bool:
        return self.spec_path.exists()

    def create(
        self, spec: JobSpec, bundle: CodeBundle, handle: JobHandle, *, cwd: str, python: str
    ) -> None:
        """Write everything the supervisor needs; the directory must not exist yet."""
        self.root.mkdir(parents=True)
        self.logs_dir.mkdir()
        self.bundle_dir.mkdir()
        for rel, data in bundle.files.items():
            target = self.bundle_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        if bundle.requirements:
            self.requirements_path.write_text("".join(r + "\n" for r in bundle.requirements))
        write_json(self.root / "local.json", {"cwd": cwd, "python": python})
        write_json(self.handle_path, asdict(handle))
        write_json(self.spec_path, spec.to_dict())  # written last: marks the dir complete

    def spec(self) -> JobSpec:
        return JobSpec.from_dict(json.loads(self.spec_path.read_text()))

    def handle(self) -> JobHandle:
        return JobHandle(**json.loads(self.handle_path.read_text()))

    def local(self) -> dict[str, str]:
        """{"cwd": ..., "python": ...} recorded at submit time."""
        return read_json(self.root / "local.json") or {}

    def status(self) -> JobStatus | None:
        data = read_json(self.status_path)
        return JobStatus.from_dict(data) if data else None

    def write_status(self, status: JobStatus) -> None:
        write_json(self.status_path, status.to_dict())

    def supervisor(self) -> dict[str, Any] | None:
        return read_json(self.supervisor_path)

    def log_files(self) -> dict[str, Path]:
        """Replica id -> log file, for every replica that has written a log."""
        if not self.logs_dir.is_dir():
            return {}
        return {p.stem: p for p in sorted(self.logs_dir.glob("*.log"))}
