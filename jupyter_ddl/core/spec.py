"""What to run: ``JobSpec``, framework-neutral, immutable, and resolved once into its
shape (``core/shape.py``, which this module builds on). No I/O here."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from jupyter_ddl._util.jsonsafe import plain
from jupyter_ddl.core.kinds import RestartPolicy
from jupyter_ddl.core.placement import GangScheduling, Resources, Toleration, VolumeMount
from jupyter_ddl.core.shape import JobShape, fill_counts, resolve


class CleanPodPolicy(str, Enum):
    """Which pods the operator deletes once the job finished (its runPolicy)."""

    NONE = "None"
    RUNNING = "Running"
    ALL = "All"


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
        out: dict[str, Any] = plain(asdict(self))
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
