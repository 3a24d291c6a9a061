"""``JobEvent``, the one event type every backend streams (status, replica state, log
line, metric, resource sample, waiting reason), and ``LogLine``, one line a replica
printed. No I/O here."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from jupyter_ddl._util.jsonsafe import plain
from jupyter_ddl.core.states import JobStatus, ReplicaStatus


class EventKind(str, Enum):
    """What a ``JobEvent`` carries."""

    STATUS = "status"  # job-level state changed
    REPLICA = "replica"  # one replica's state changed
    LOG = "log"  # one log line
    METRIC = "metric"  # training metrics parsed from a log line / report()
    RESOURCE = "resource"  # cpu/memory/gpu sample of a replica
    WAITING = "waiting"  # why a replica waits (FailedScheduling, ImagePullBackOff, ...)


@dataclass(frozen=True)
class LogLine:
    """One line a replica printed, with its position in the replica's log."""

    replica: str  # "worker-1"
    offset: int  # line number within that replica's log, from 0
    text: str
    time: float | None = None
    stream: str = "stdout"


#: the stream of jupyter-ddl's own notes in a replica's log (exits, restarts, stops)
NOTE_STREAM = "ddl"
#: how the local backend's note on a replica started without its warm interpreter
#: begins: kept in the log file (``%ddl logs``, the benchmarks), never shown as the
#: first line of the user's output in the dashboard, the record or the lab
COLD_START = "cold start: "


def internal_note(stream: str, text: str) -> bool:
    """True for a note about how jupyter-ddl ran the job rather than about the job."""
    return stream == NOTE_STREAM and text.startswith(COLD_START)


@dataclass(frozen=True)
class JobEvent:
    """One item of a job's event stream; which fields are set depends on ``kind``."""

    kind: EventKind
    job: str
    time: float = field(default_factory=time.time)
    replica: str | None = None
    status: JobStatus | None = None  # STATUS
    replica_status: ReplicaStatus | None = None  # REPLICA
    log: LogLine | None = None  # LOG
    metrics: dict[str, float] | None = None  # METRIC / RESOURCE
    step: int | None = None  # METRIC
    message: str | None = None  # WAITING
    source: str | None = None  # METRIC: metrics.SOURCES (report, keras, log)

    def to_dict(self) -> dict[str, Any]:
        """The line as JSON-ready data."""
        out: dict[str, Any] = plain(asdict(self))
        return out
