"""The plain data every part of the product passes around.

``JobSpec`` says what to run, ``CodeBundle`` what code to ship, ``JobHandle`` how to
find a submitted job again, ``JobStatus``/``ReplicaStatus`` where it stands, and
``JobEvent`` is the one event type every backend streams (status, replica state, log
line, metric, resource sample, waiting reason). No I/O here.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

# the operators' spelling of roles and restart policies: kinds.py holds them
from jupyter_ddl.core.kinds import RestartPolicy as RestartPolicy
from jupyter_ddl.core.kinds import replica_id as replica_id
from jupyter_ddl.core.placement import GangScheduling as GangScheduling
from jupyter_ddl.core.placement import Resources as Resources
from jupyter_ddl.core.placement import Toleration as Toleration
from jupyter_ddl.core.placement import VolumeMount as VolumeMount
from jupyter_ddl.core.shape import JobShape, fill_counts, resolve


class CleanPodPolicy(str, Enum):
    """Which pods the operator deletes once the job finished (its runPolicy)."""

    NONE = "None"
    RUNNING = "Running"
    ALL = "All"


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


class EventKind(str, Enum):
    """What a ``JobEvent`` carries."""

    STATUS = "status"  # job-level state changed
    REPLICA = "replica"  # one replica's state changed
    LOG = "log"  # one log line
    METRIC = "metric"  # training metrics parsed from a log line / report()
    RESOURCE = "resource"  # cpu/memory/gpu sample of a replica
    WAITING = "waiting"  # why a replica waits (FailedScheduling, ImagePullBackOff, ...)


#: restarts allowed when the user gave no backoff limit (a Kubernetes Job allows 6)
DEFAULT_BACKOFF_LIMIT = 3


@dataclass(frozen=True)
class JobSpec:
    """Framework-neutral description of one distributed job.

    ``replicas`` maps operator role names ("Chief", "Worker", "PS", "Evaluator",
    "Master", "Launcher", "Node") to counts. At construction a role the strategy has but
    ``replicas`` does not name gets the strategy's default, written into ``replicas``, so
    the spec (and spec.json) holds every count; 0 means the role is absent.
    ``resources`` gives per-role resources and ``default_resources`` applies to roles not
    named there. ``shape`` is the resolved job (``jupyter_ddl.core.shape``), resolved on
    first use and kept: the spec is immutable, so a changed job is a new spec
    (``dataclasses.replace``), never a mutated one.
    """

    name: str
    strategy: str
    replicas: dict[str, int] = field(default_factory=dict)
    resources: dict[str, Resources] = field(default_factory=dict)
    default_resources: Resources = field(default_factory=Resources)
    image: str | None = None
    command: list[str] | None = None  # overrides the generated entry command
    env: dict[str, str] = field(default_factory=dict)
    secret_env: list[str] = field(default_factory=list)  # names; values never in the spec
    restart_policy: RestartPolicy | None = None  # None: the kind's default
    backoff_limit: int | None = None  # None: DEFAULT_BACKOFF_LIMIT (effective_backoff_limit)
    active_deadline_seconds: int | None = None
    ttl_seconds_after_finished: int | None = None
    clean_pod_policy: CleanPodPolicy | None = None  # None: Running (PS never exit)
    gang: GangScheduling | None = None
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[Toleration] = field(default_factory=list)
    volumes: list[VolumeMount] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    namespace: str | None = None
    backend: str = "local"
    backend_options: dict[str, Any] = field(default_factory=dict)
    # torch
    dist_backend: str | None = None  # gloo | nccl | mpi; None: nccl with GPUs else gloo
    nproc_per_node: int | None = None  # > 1 launches torchrun inside each replica
    target: str | None = None  # "TrainJob" to submit torch strategies to Trainer v2
    runtime_ref: str | None = None  # TrainJob runtime name
    # MPI
    slots_per_worker: int = 1
    # provenance
    notebook: str | None = None
    cell_id: str | None = None  # the notebook cell the job came from (nbformat 4.5 id)
    user: str | None = None

    def __post_init__(self) -> None:
        self._fill()

    def _fill(self) -> None:
        object.__setattr__(self, "replicas", fill_counts(self.strategy, self.replicas, self.target))

    @property
    def shape(self) -> JobShape:
        """The resolved job: final counts, kind, world size, replica ids and ranks.
        Raises ValidationError when the strategy is unknown or a count is no count."""
        cached: JobShape | None = self.__dict__.get("_shape")
        if cached is None:
            cached = resolve(self)
            object.__setattr__(self, "_shape", cached)
        return cached

    @property
    def effective_backoff_limit(self) -> int:
        """The limit applied: a crash loop must end even when the user set none (the
        operators' own default is unlimited, which leaves a broken job restarting forever)."""
        return DEFAULT_BACKOFF_LIMIT if self.backoff_limit is None else self.backoff_limit

    def resources_for(self, role: str) -> Resources:
        """The resources of ``role`` (its own, else the job's)."""
        return self.resources.get(role, self.default_resources)

    def to_dict(self) -> dict[str, Any]:
        """The spec as JSON-ready data."""
        out: dict[str, Any] = _plain(asdict(self))
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobSpec:
        """A spec from ``to_dict``'s data."""
        d = dict(data)
        d["resources"] = {k: Resources(**v) for k, v in d.get("resources", {}).items()}
        d["default_resources"] = Resources(**d.get("default_resources", {}))
        d["gang"] = GangScheduling(**d["gang"]) if d.get("gang") else None
        d["tolerations"] = [Toleration(**t) for t in d.get("tolerations", [])]
        d["volumes"] = [VolumeMount(**v) for v in d.get("volumes", [])]
        if d.get("restart_policy"):
            d["restart_policy"] = RestartPolicy(d["restart_policy"])
        if d.get("clean_pod_policy"):
            d["clean_pod_policy"] = CleanPodPolicy(d["clean_pod_policy"])
        return cls(**d)


@dataclass
class CodeBundle:
    """The files shipped with a job, by relative path.

    ``entrypoint`` is the file each replica runs; ``requirements`` come from the
    cell's ``!pip install`` lines. The digest covers paths, contents and
    requirements, so the same code always gives the same digest (and image tag).
    """

    files: dict[str, bytes] = field(default_factory=dict)
    entrypoint: str = "main.py"
    requirements: list[str] = field(default_factory=list)
    source_notebook: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def digest(self) -> str:
        """A content digest of the files, entry point and requirements."""
        h = hashlib.sha256()
        for path in sorted(self.files):
            h.update(path.encode() + b"\0" + hashlib.sha256(self.files[path]).digest())
        h.update(json.dumps([self.entrypoint, sorted(self.requirements)]).encode())
        return "sha256:" + h.hexdigest()

    @property
    def short_digest(self) -> str:
        """The digest's first 12 hex digits, as shown to people."""
        return self.digest.split(":", 1)[1][:12]


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
        d: dict[str, Any] = _plain(asdict(self))
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


@dataclass(frozen=True)
class LogLine:
    """One line a replica printed, with its position in the replica's log."""

    replica: str  # "worker-1"
    offset: int  # line number within that replica's log, from 0
    text: str
    time: float | None = None
    stream: str = "stdout"


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
        out: dict[str, Any] = _plain(asdict(self))
        return out


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do; surfaces hide what it cannot."""

    gpus: int = 0
    strategies: tuple[str, ...] = ()
    cancel: bool = True
    delete: bool = True
    follow_logs: bool = True
    resource_metrics: bool = False
    image_build: bool = False
    detail: dict[str, Any] = field(default_factory=dict)


def _plain(value: Any) -> Any:
    """asdict() output with enums as their values, ready for JSON."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
