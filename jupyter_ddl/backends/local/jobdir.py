"""The job directory: everything needed to list, inspect, re-attach to and clean up a
local job, on disk, so jobs outlive the kernel that submitted them.

Layout under ``<data dir>/jobs/<name>/``::

    spec.json         the JobSpec (secret values are never in it: names only)
    handle.json       the JobHandle
    bundle/           the CodeBundle's files (main.py, cell.py, the runtime shim's files),
                      and a private __pycache__/ beside them for the replicas' bytecode
    requirements.txt  the bundle's requirements, when there are any
    local.json        where replicas start, with what interpreter, environment names
                      and limits (``LocalSettings``)
    status.json       the JobStatus, rewritten atomically by the supervisor
    supervisor.json   {"pid", "create_time", "ready"} of the supervisor process ("ready"
                      once its signal handlers are in place; "warm" and "spare", the
                      pid of the spare that forked it, for a warm one)
    processes.json    [[pid, start time], ...]: every process seen below the supervisor
    supervisor.log    the supervisor's own output (tracebacks of our bugs land here)
    setup.log         pip output when requirements are installed
    hostfile          the MPI hostfile (MPI strategies)
    cancel            present once a cancel was asked for
    logs/<replica>.log  one file per replica: "<UTC time> <stream> <text>" per line

Directories are created 0700 and files 0600: logs and bundles may hold what the
cell printed or read, and other users of the machine have no business there.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from jupyter_ddl._util import timestamps, typecheck
from jupyter_ddl._util.atomic import write_atomic
from jupyter_ddl.models import CodeBundle, JobHandle, JobSpec, JobStatus

_REPLICA_ID = re.compile(r"^[a-z]+-[0-9]+$")  # worker-1: the only shape of a log's name

#: the supervisor's own import path entry, taken off again for the replicas
SUPERVISOR_PATH_ENV = "JUPYTER_DDL_SUPERVISOR_PATH"


def jobs_root(data_dir: Path) -> Path:
    return data_dir / "jobs"


DIR_MODE = 0o700
FILE_MODE = 0o600


def write_private(path: Path, data: bytes) -> None:
    """Create ``path`` readable by its owner only, whatever the umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def write_json(path: Path, value: Any) -> None:
    write_atomic(path, json.dumps(value, indent=1, sort_keys=True).encode())


def read_json(path: Path) -> Any | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def format_log_line(t: float, stream: str, text: str) -> str:
    """One timestamped log line: ``2026-11-21T23:40:01.123456Z stdout text``."""
    return f"{timestamps.format_micro(t)} {stream} {text}\n"


def parse_log_line(line: str) -> tuple[float | None, str, str]:
    """(time, stream, text) of a stored line; foreign lines come back as stdout text."""
    line = line.rstrip("\n")
    parts = line.split(" ", 2)
    if len(parts) >= 2 and parts[0].endswith("Z"):
        stamp = timestamps.parse(parts[0])
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
        if item[0] is not None and len(stamp) == 27:  # the next lines of its second
            head, base = stamp[:19], timestamps.second_epoch(stamp[:19]) * 1_000_000
    return out


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
    processes_path = property(lambda self: self.root / "processes.json")
    requirements_path = property(lambda self: self.root / "requirements.txt")

    def log_path(self, replica: str) -> Path:
        """The log of replica ``worker-1``; callers look the id up among the job's
        replicas first, and anything that is not an id is refused here as well."""
        if not _REPLICA_ID.match(replica):
            raise ValueError(f"not a replica id: {replica!r}")
        return Path(self.logs_dir, f"{replica}.log")

    def exists(self) -> bool:
        return bool(self.spec_path.exists())

    def create(
        self,
        spec: JobSpec,
        bundle: CodeBundle,
        handle: JobHandle,
        *,
        cwd: str,
        python: str,
        settings: dict[str, Any] | None = None,
    ) -> None:
        """Write everything the supervisor needs into the directory, which must not
        exist yet or be empty (the caller made it, to claim the name)."""
        self.root.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        try:
            self.root.mkdir(mode=DIR_MODE)
        except FileExistsError:
            if any(self.root.iterdir()):
                raise
        os.chmod(self.root, DIR_MODE)  # mkdir's mode passes through the umask
        for d in (self.logs_dir, self.bundle_dir):
            d.mkdir(mode=DIR_MODE)
        for rel, data in bundle.files.items():
            target = self.bundle_dir / rel
            target.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            write_private(target, data)
            if target.suffix == ".py":
                # the replicas import these under the kernel's umask: Python would make
                # the bytecode directory 0755 (its files copy the sources' 0600 mode)
                (target.parent / "__pycache__").mkdir(mode=DIR_MODE, exist_ok=True)
        if bundle.requirements:
            text = "".join(r + "\n" for r in bundle.requirements)
            write_private(self.requirements_path, text.encode())
        write_json(self.root / "local.json", {"cwd": cwd, "python": python, **(settings or {})})
        write_json(self.handle_path, asdict(handle))
        write_json(self.spec_path, spec.to_dict())  # written last: marks the dir complete

    def spec(self) -> JobSpec:
        spec = _parsed(self.spec_path, JobSpec.from_dict)
        try:
            spec.shape  # noqa: B018 - the counts must resolve, or nothing can show the job
        except Exception as e:  # noqa: BLE001 - whatever a mangled spec raises
            raise ValueError(f"its replicas do not resolve ({_why(e)})") from None
        return spec

    def handle(self) -> JobHandle:
        return _parsed(self.handle_path, lambda d: JobHandle(**d))

    def local(self) -> dict[str, Any]:
        """{"cwd": ..., "python": ..., settings...} recorded at submit time."""
        data = read_json(self.root / "local.json")
        return data if isinstance(data, dict) else {}

    def requirements(self) -> list[str]:
        try:
            text = self.requirements_path.read_text()
        except OSError:
            return []
        return [line.strip() for line in text.splitlines() if line.strip()]

    def status(self) -> JobStatus | None:
        """The last status written, None before the first; raises ValueError (or
        TypeError/KeyError) when the file is there but is no status."""
        if not self.status_path.exists():
            return None
        try:
            return _parsed(self.status_path, JobStatus.from_dict)
        except FileNotFoundError:
            return None

    def write_status(self, status: JobStatus) -> None:
        write_json(self.status_path, status.to_dict())

    def supervisor(self) -> dict[str, Any] | None:
        data = read_json(self.supervisor_path)
        return data if isinstance(data, dict) else None

    def processes(self) -> list[tuple[int, float]]:
        """(pid, start time) of every process recorded for the job."""
        data = read_json(self.processes_path)
        out = []
        for item in data if isinstance(data, list) else []:
            try:
                out.append((int(item[0]), float(item[1])))
            except (TypeError, ValueError, IndexError):
                continue
        return out

    def write_processes(self, records: list[tuple[int, float]]) -> None:
        write_json(self.processes_path, [list(r) for r in records])

    def log_files(self) -> dict[str, Path]:
        """Replica id -> log file, for every replica that has written a log."""
        if not self.logs_dir.is_dir():
            return {}
        return {p.stem: p for p in sorted(self.logs_dir.glob("*.log"))}


T = TypeVar("T")


def _parsed(path: Path, build: Callable[[Any], T]) -> T:
    """``build`` over the JSON in ``path``; ValueError (one line) when the file is not
    what jupyter-ddl wrote: not JSON, a field missing or of the wrong type."""
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"holds {type(data).__name__}, not an object")
    try:
        obj = build(data)
    except Exception as e:  # noqa: BLE001 - whatever a mangled record raises
        raise ValueError(_why(e)) from None
    bad = typecheck.mismatch(obj)
    if bad:
        raise ValueError(f"{bad} has the wrong type")
    name = getattr(obj, "name", path.parent.name)
    if name != path.parent.name:
        raise ValueError(f"names another job ({str(name)[:60]!r})")
    return obj


def _why(e: BaseException) -> str:
    text = str(e).splitlines()[0][:120] if str(e) else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
