"""Kubeflow Trainer v2 releases and runtimes, as far as a TrainJob depends on them (pure).

A TrainJob reaches its pods through a field that changed name and shape twice
(operator-contract.md §4.6): ``podSpecOverrides`` in v2.0, ``podTemplateOverrides`` in
v2.1, ``runtimePatches`` from v2.2; ``activeDeadlineSeconds`` exists from v2.2.
``Release`` holds those facts per release; ``release_of`` reads a release from the
version text Trainer publishes, ``release_from_crd`` from the fields its TrainJob CRD
declares.

A runtime decides the replica layout (§4.1, §4.3): its replicatedJobs, which of them
gets ``trainer.*`` (the trainer step), its ML policy, and for MPI whether the launcher
is one of the ``numNodes`` hosts (``runLauncherAsNode``, set by every shipped MPI
runtime; the ``node`` job then runs numNodes − 1 pods). ``RuntimeLayout`` holds that,
read from the cluster's runtime (``layout_of``) or, without a cluster, from what
Trainer ships (``shipped_layout``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jupyter_ddl.errors import ValidationError
from jupyter_ddl.i18n import tr

RELEASES = ("v2.0.0", "v2.1.0", "v2.2.0", "v2.3.0")
NEWEST = RELEASES[-1]
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
#: where Trainer (v2.2 on) publishes its version, readable by every authenticated user
PUBLIC_CONFIGMAP = ("kubeflow-system", "kubeflow-trainer-public", "kubeflow_trainer_version")


@dataclass(frozen=True)
class Release:
    name: str
    override_field: str  # the TrainJob field that reaches the runtime's pod templates
    deadline: bool  # spec.activeDeadlineSeconds exists
    job_metadata: bool  # spec.labels / spec.annotations exist (v2.0, v2.1)
    launcher_first: bool  # shipped MPI runtimes list the launcher job before node (<= v2.2)

    @property
    def number(self) -> tuple[int, ...]:
        return _number(self.name)


_RELEASES = {
    "v2.0.0": Release("v2.0.0", "podSpecOverrides", False, True, True),
    "v2.1.0": Release("v2.1.0", "podTemplateOverrides", False, True, True),
    "v2.2.0": Release("v2.2.0", "runtimePatches", True, False, True),
    "v2.3.0": Release("v2.3.0", "runtimePatches", True, False, False),
}


def _number(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def release_named(name: str) -> Release:
    """A supported release by name; ValidationError naming them otherwise."""
    found = _RELEASES.get(name if name.startswith("v") else f"v{name}")
    if found is None:
        raise ValidationError(
            tr(
                "trainer_release: {name!r} is not a Trainer release jupyter-ddl knows; "
                "use one of {known}",
                name=name,
                known=", ".join(RELEASES),
            )
        )
    return found


def release_of(version: str) -> str | None:
    """The supported release a published version behaves like (``v2.2.1`` -> v2.2.0,
    anything newer than the newest -> the newest); None for a version before v2."""
    number = _number(version)
    if not number or number < (2,):
        return None
    known = [r for r in RELEASES if _RELEASES[r].number <= number]
    return known[-1] if known else None


def release_from_crd(crd: Mapping[str, Any]) -> str | None:
    """The oldest release whose TrainJob fields the CRD declares (v2.2 and v2.3 look
    alike: both answer v2.2.0); None when the CRD shows none of the override fields."""
    for version in (crd.get("spec") or {}).get("versions") or []:
        schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
        fields = ((schema.get("properties") or {}).get("spec") or {}).get("properties") or {}
        for name in RELEASES:
            r = _RELEASES[name]
            if r.override_field in fields and r.deadline == ("activeDeadlineSeconds" in fields):
                return name
    return None


@dataclass(frozen=True)
class RuntimeLayout:
    """How a runtime turns a TrainJob into pods."""

    name: str
    policy: str  # the ML policy: torch | mpi | jax | xgboost | ... | plain
    jobs: tuple[str, ...]  # replicatedJob names, in the runtime's order
    trainer_job: str  # the one that gets trainer.image/command (ancestor step "trainer")
    launcher_as_node: bool = False  # MPI: the launcher is one of the numNodes hosts

    @property
    def mpi(self) -> bool:
        return self.policy == "mpi"

    @property
    def hosts(self) -> tuple[str, ...]:
        """The replicatedJobs whose pods are MPI hosts, in hostfile order (§4.3)."""
        return tuple(
            j for j in self.jobs if j == "node" or (j == "launcher" and self.launcher_as_node)
        )

    def node_pods(self, num_nodes: int) -> int:
        """Pods of the ``node`` job for ``numNodes`` (``mpi.go`` EnforceMLPolicy)."""
        return max(num_nodes - 1, 1) if self.launcher_as_node else num_nodes

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "policy": self.policy, "jobs": list(self.jobs),
                "trainer_job": self.trainer_job, "launcher_as_node": self.launcher_as_node}  # fmt: skip

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RuntimeLayout:
        return cls(str(d["name"]), str(d["policy"]), tuple(d["jobs"]), str(d["trainer_job"]),
                   bool(d.get("launcher_as_node")))  # fmt: skip


def layout_of(runtime: Mapping[str, Any]) -> RuntimeLayout:
    """The layout of a (Cluster)TrainingRuntime object as the cluster stores it."""
    spec = runtime.get("spec") or {}
    ml = spec.get("mlPolicy") or {}
    policy = next((k for k in ("torch", "mpi", "jax", "xgboost", "flux") if ml.get(k) is not None),
                  "plain")  # fmt: skip
    rjobs = ((spec.get("template") or {}).get("spec") or {}).get("replicatedJobs") or []
    jobs = tuple(str(j.get("name")) for j in rjobs)
    trainer = next(
        (str(j.get("name")) for j in rjobs
         if (((j.get("template") or {}).get("metadata") or {}).get("labels") or {}).get(ANCESTOR) == "trainer"),
        "node",
    )  # fmt: skip
    as_node = bool((ml.get("mpi") or {}).get("runLauncherAsNode"))
    return RuntimeLayout(str((runtime.get("metadata") or {}).get("name", "")), policy, jobs,
                         trainer, as_node)  # fmt: skip


#: ML policy of the runtimes Trainer ships, by name (§4.1, §4.6)
SHIPPED_POLICY = {"torch-distributed": "torch", "deepspeed-distributed": "mpi",
                  "mlx-distributed": "mpi", "mpi-distributed": "mpi"}  # fmt: skip


def shipped_layout(name: str, release: Release) -> RuntimeLayout:
    """The layout of runtime ``name`` as ``release`` ships it; a runtime Trainer does not
    ship is taken for a torch one with a single ``node`` job (the cluster's own runtime
    replaces this guess at submit)."""
    if SHIPPED_POLICY.get(name) == "mpi":  # every shipped MPI runtime runs the launcher as a node
        jobs = ("launcher", "node") if release.launcher_first else ("node", "launcher")
        return RuntimeLayout(name, "mpi", jobs, "launcher", launcher_as_node=True)
    return RuntimeLayout(name, "torch", ("node",), "node")
