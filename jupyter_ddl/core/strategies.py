"""The strategy catalog: one entry per strategy the product supports.

Each entry says which framework and Kubeflow job kind it maps to, which roles it has
and how many of each it allows, how each replica is launched, and which setup the
runtime shim performs (``shim``). Adding a strategy is one entry here plus its tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from jupyter_ddl.core.kinds import MPIJOB, PYTORCHJOB, TFJOB, Kind
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.i18n import tr


@dataclass(frozen=True)
class RoleRule:
    role: str  # operator spelling
    min: int
    max: int | None  # None: unbounded
    default: int
    gpu: bool = True  # may this role use accelerators?
    # Does ``--replicas N`` count this role? It counts the replicas that train: not the
    # PS, the MPI launcher, the evaluator, nor the ParameterServer chief (a coordinator).
    counted: bool = True
    # A server waits for work until stopped (PS, and the workers a TF coordinator
    # dispatches to): once the job succeeded it is stopped at once, not waited for.
    serves: bool = False

    def allows(self, n: int) -> bool:
        return n >= self.min and (self.max is None or n <= self.max)

    def describe(self) -> str:
        if self.max == self.min:
            return f"exactly {self.min}"
        if self.max is None:
            return f"at least {self.min}"
        return f"{self.min} to {self.max}"


@dataclass(frozen=True)
class Strategy:
    name: str
    framework: str  # tensorflow | pytorch | mpi
    title: str
    summary: str  # one line, shown in the form and `%ddl strategies`
    kind: Kind  # what it runs as (a TrainJob instead with target TrainJob)
    roles: tuple[RoleRule, ...]
    launcher: str  # python | torchrun | mpirun
    shim: str  # which setup the runtime shim performs
    dist_backends: tuple[str, ...] = ()
    trainjob_runtime: str | None = None  # Trainer v2 runtime when targeting TrainJob
    needs_tpu: bool = False
    elastic: bool = False
    one_process: bool = False  # one process drives every GPU of a replica (DataParallel)

    def rule(self, role: str) -> RoleRule | None:
        return next((r for r in self.roles if r.role == role), None)

    @property
    def role_names(self) -> tuple[str, ...]:
        return tuple(r.role for r in self.roles)

    def default_replicas(self) -> dict[str, int]:
        """Every role's default count, zeros included."""
        return {r.role: r.default for r in self.roles}

    @property
    def process_per_gpu(self) -> bool:
        """Does a replica start one training process per GPU (torchrun)?"""
        return self.framework == "pytorch" and not self.one_process

    @property
    def server_roles(self) -> frozenset[str]:
        """The roles stopped as soon as the job succeeded (see ``RoleRule.serves``)."""
        return frozenset(r.role for r in self.roles if r.serves)

    @property
    def counted_roles(self) -> tuple[RoleRule, ...]:
        """The roles ``--replicas N`` adds up to N."""
        return tuple(r for r in self.roles if r.counted)

    @property
    def default_total(self) -> int:
        """What ``--replicas`` is when not given."""
        return sum(r.default for r in self.counted_roles)

    @property
    def fill_role(self) -> RoleRule:
        """The role that takes what ``--replicas N`` leaves once the others are set."""
        counted = self.counted_roles
        return next((r for r in counted if r.role == "Worker"), counted[-1])


def _single(role: str = "Worker") -> tuple[RoleRule, ...]:
    return (RoleRule(role, 1, 1, 1),)


_TORCH_BACKENDS = ("gloo", "nccl", "mpi")

CATALOG: dict[str, Strategy] = {
    s.name: s
    for s in (
        Strategy(
            "tf-mirrored",
            "tensorflow",
            "TF MirroredStrategy",
            "One replica, synchronous data parallelism over all its GPUs (all-reduce).",
            TFJOB,
            _single(),
            "python",
            "tf-mirrored",
        ),
        Strategy(
            "tf-central-storage",
            "tensorflow",
            "TF CentralStorageStrategy",
            "One replica; variables live on the CPU, computation is mirrored over its GPUs.",
            TFJOB,
            _single(),
            "python",
            "tf-central-storage",
        ),
        Strategy(
            "tf-multi-worker-mirrored",
            "tensorflow",
            "TF MultiWorkerMirroredStrategy",
            "Synchronous all-reduce training over several workers (and an optional chief).",
            TFJOB,
            (
                RoleRule("Chief", 0, 1, 0),
                RoleRule("Worker", 1, None, 2),
                RoleRule("Evaluator", 0, 1, 0, counted=False),
            ),
            "python",
            "tf-multi-worker-mirrored",
        ),
        Strategy(
            "tf-parameter-server",
            "tensorflow",
            "TF ParameterServerStrategy",
            "Asynchronous training: a coordinator (chief) dispatches steps to workers; PS hold variables.",
            TFJOB,
            (
                RoleRule("Chief", 1, 1, 1, counted=False),
                RoleRule("Worker", 1, None, 2, serves=True),
                RoleRule("PS", 1, None, 1, gpu=False, counted=False, serves=True),
                RoleRule("Evaluator", 0, 1, 0, counted=False),
            ),
            "python",
            "tf-parameter-server",
        ),
        Strategy(
            "tf-tpu",
            "tensorflow",
            "TF TPUStrategy",
            "One replica driving a Cloud TPU slice (needs a TPU resource, e.g. google.com/tpu).",
            TFJOB,
            _single(),
            "python",
            "tf-tpu",
            needs_tpu=True,
        ),
        Strategy(
            "torch-dp",
            "pytorch",
            "PyTorch DataParallel",
            "One process splits each batch over the GPUs of one replica (single node).",
            PYTORCHJOB,
            (RoleRule("Master", 1, 1, 1),),
            "python",
            "torch-dp",
            one_process=True,
        ),
        Strategy(
            "torch-ddp",
            "pytorch",
            "PyTorch DistributedDataParallel",
            "One process per replica (torchrun per GPU), gradients all-reduced over gloo/nccl/mpi.",
            PYTORCHJOB,
            (RoleRule("Master", 1, 1, 1), RoleRule("Worker", 0, None, 1)),
            "python",
            "torch-ddp",
            _TORCH_BACKENDS,
            trainjob_runtime="torch-distributed",
        ),
        Strategy(
            "torch-elastic",
            "pytorch",
            "PyTorch elastic (torchrun rendezvous)",
            "Workers join through a c10d rendezvous; the job tolerates workers coming and going.",
            PYTORCHJOB,
            (RoleRule("Worker", 1, None, 2),),
            "torchrun",
            "torch-ddp",
            _TORCH_BACKENDS,
            trainjob_runtime="torch-distributed",
            elastic=True,
        ),
        Strategy(
            "horovod",
            "mpi",
            "Horovod over MPI",
            "An MPI launcher runs mpirun over the workers; Horovod (or mpi4py) all-reduces.",
            MPIJOB,
            (
                RoleRule("Launcher", 1, 1, 1, gpu=False, counted=False),
                RoleRule("Worker", 1, None, 2),
            ),
            "mpirun",
            "horovod",
        ),
        Strategy(
            "deepspeed",
            "pytorch",
            "DeepSpeed",
            "DeepSpeed engine (ZeRO) on a PyTorchJob; ranks rendezvous like DDP.",
            PYTORCHJOB,
            (RoleRule("Master", 1, 1, 1), RoleRule("Worker", 0, None, 1)),
            "python",
            "deepspeed",
            _TORCH_BACKENDS,
            trainjob_runtime="deepspeed-distributed",
        ),
        Strategy(
            "ignite",
            "pytorch",
            "PyTorch Ignite (idist)",
            "ignite.distributed reads the same env as DDP; the cell uses idist.Parallel or auto_*.",
            PYTORCHJOB,
            (RoleRule("Master", 1, 1, 1), RoleRule("Worker", 0, None, 1)),
            "python",
            "ignite",
            _TORCH_BACKENDS,
            trainjob_runtime="torch-distributed",
        ),
    )
}

FRAMEWORKS = ("tensorflow", "pytorch", "mpi")
FRAMEWORK_TITLES = {"tensorflow": "TensorFlow", "pytorch": "PyTorch", "mpi": "MPI / Horovod"}

#: (top-level module a notebook imports, the strategy that import suggests), the most
#: specific first: a DeepSpeed or Ignite notebook imports torch too, a Keras one may
#: import neither tensorflow nor torch. Offered by the REST catalog to the
#: "Distribute this cell" dialog, which looks for these imports in the notebook.
IMPORT_HINTS: tuple[tuple[str, str], ...] = (
    ("deepspeed", "deepspeed"),
    ("ignite", "ignite"),
    ("horovod", "horovod"),
    ("mpi4py", "horovod"),
    ("tensorflow", "tf-multi-worker-mirrored"),
    ("tf_keras", "tf-multi-worker-mirrored"),
    ("keras", "tf-multi-worker-mirrored"),
    ("torch", "torch-ddp"),
)


def get_strategy(name: str) -> Strategy:
    """Return the catalog entry; raises ValidationError listing the known names."""
    try:
        return CATALOG[name]
    except KeyError:
        known = ", ".join(CATALOG)
        raise ValidationError(
            "strategy: "
            + tr("unknown strategy {name!r}; choose one of: {known}", name=name, known=known)
        ) from None


def by_framework() -> dict[str, list[Strategy]]:
    out: dict[str, list[Strategy]] = {f: [] for f in FRAMEWORKS}
    for s in CATALOG.values():
        out[s.framework].append(s)
    return out
