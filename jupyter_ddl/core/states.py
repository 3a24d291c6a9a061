"""Where a job stands: ``JobState`` and ``ReplicaState`` in the operators' spelling,
``JobStatus`` with each ``ReplicaStatus``, and ``JobHandle``, enough to find a
submitted job again. No I/O here."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from jupyter_ddl._util.jsonsafe import plain
from jupyter_ddl.core.kinds import replica_id


class JobState(str, Enum):
    """Where a job stands, in the operators' spelling."""

    PENDING = "Pending"  # accepted, no replica started yet
    CREATED = "Created"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    CANCELLED = "Cancelled"

    @property
    def finished(self) -> bool:
        """True once the job ended (succeeded, failed or cancelled)."""
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


class ReplicaState(str, Enum):
    """Where one replica stands."""

    PENDING = "Pending"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TERMINATED = "Terminated"  # stopped by us (cancel, or the job ended first)

    @property
    def finished(self) -> bool:
        """True once the replica ended."""
        return self in (ReplicaState.SUCCEEDED, ReplicaState.FAILED, ReplicaState.TERMINATED)


@dataclass
class JobHandle:
    """Enough to find a job again after a kernel restart."""

    name: str
    backend: str
    namespace: str | None = None
    created: float = field(default_factory=time.time)
    notebook: str | None = None
    code_digest: str | None = None
    cell_id: str | None = None
    image: str | None = None  # what the replicas run (Kubernetes)
    image_pushed: bool | None = None  # False: it was in the registry; None: no push
    warnings: list[str] = field(default_factory=list)  # what the submit checks found


@dataclass
class ReplicaStatus:
    """One replica of a job: where it stands, its exit and restarts."""

    role: str  # operator spelling, e.g. "Worker"
    index: int
    state: ReplicaState = ReplicaState.PENDING
    restarts: int = 0
    exit_code: int | None = None
    signal: int | None = None
    message: str | None = None  # waiting reason or failure summary
    last_lines: list[str] = field(default_factory=list)
    pid: int | None = None
    pod: str | None = None
    rank: int | None = None  # node rank (shape.Replica.rank); None outside the collective
    ended: float | None = None  # when its last process ended (failure time), epoch seconds
    metrics: dict[str, float] = field(default_factory=dict)  # latest training metrics
    resources: dict[str, float] = field(default_factory=dict)  # latest usage sample

    @property
    def label(self) -> str:
        """``worker-0 · rank 1``: the id with its rank, as every surface shows it."""
        return self.id if self.rank is None else f"{self.id} · rank {self.rank}"

    @property
    def id(self) -> str:
        """``worker-0``: the replica's role in lower case and its index."""
        return replica_id(self.role, self.index)


@dataclass
class JobStatus:
    """Where a job stands, with each of its replicas."""

    name: str
    backend: str
    strategy: str
    state: JobState
    replicas: list[ReplicaStatus] = field(default_factory=list)
    message: str | None = None
    created: float | None = None
    started: float | None = None
    finished: float | None = None
    namespace: str | None = None
    notebook: str | None = None
    code_digest: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)  # latest values
    cell_id: str | None = None
    backoff_limit: int | None = None  # restarts allowed across every replica together
    image: str | None = None  # as JobHandle's three
    image_pushed: bool | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def ready(self) -> int:
        """How many replicas are running."""
        return sum(r.state == ReplicaState.RUNNING for r in self.replicas)

    @property
    def restarts(self) -> int:
        """Restarts of every replica together: what the backoff limit counts."""
        return sum(r.restarts for r in self.replicas)

    def to_dict(self) -> dict[str, Any]:
        """The status as JSON-ready data."""
        d: dict[str, Any] = plain(asdict(self))
        for r, rs in zip(d["replicas"], self.replicas, strict=True):
            r["id"] = rs.id
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobStatus:
        """A status from ``to_dict``'s data."""
        d = dict(data)
        d["state"] = JobState(d["state"])
        reps = []
        for r in d.get("replicas", []):
            r = {k: v for k, v in r.items() if k != "id"}
            r["state"] = ReplicaState(r["state"])
            reps.append(ReplicaStatus(**r))
        d["replicas"] = reps
        return cls(**d)
