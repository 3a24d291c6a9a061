"""The job directory: everything needed to list, inspect, re-attach to and clean up a
local job, on disk, so jobs outlive the kernel that submitted them.

Layout under ``<data dir>/jobs/<name>/``::

    spec.json         the JobSpec (secret values are never in it: names only)
    handle.json       the JobHandle
    bundle/           the CodeBundle's files (main.py, cell.py, ddl_runtime.py)
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


def format_log_line(t: float, stream: str, text: str) -> str:
    """One timestamped log line: ``2026-11-21T23:40:01.123456Z stdout text``."""
    stamp = datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{stamp} {stream} {text}\n"


def parse_log_line(line: str) -> tuple[float | None, str, str]:
    """(time, stream, text) of a stored line; foreign lines come back as stdout text."""
    parts = line.rstrip("\n").split(" ", 2)
    if len(parts) >= 2 and parts[0].endswith("Z"):
        try:
            t = datetime.strptime(parts[0], "%Y-%m-%dT%H:%M:%S.%fZ")
        except ValueError:
            return None, "stdout", line.rstrip("\n")
        stamp = t.replace(tzinfo=timezone.utc).timestamp()
        return stamp, parts[1], parts[2] if len(parts) == 3 else ""
    return None, "stdout", line.rstrip("\n")


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
