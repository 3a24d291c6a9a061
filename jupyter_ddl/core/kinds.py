"""The Kubeflow job kinds jupyter-ddl submits, one class each (pure, no I/O).

A kind knows where it lives in the API, its replica map and the container its operator
looks for, how that operator names, labels and reaches the pods, which replicas end
the job, how the job is suspended and which operator serves it (for messages); the
environment each operator injects is ``contract.replica_env``'s. Manifests, status, validation, both
backends and the dry run ask the kind instead of comparing kind names. The TrainJob
kind also carries the Trainer release it is written for (``trainer.py``). Section
numbers refer to ``docs/operator-contract.md``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from jupyter_ddl.core.trainer import NEWEST, RELEASES, Release, release_named
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.i18n import tr

TK = "training.kubeflow.org/"  # training-operator and mpi-operator pod labels (§1.4, §3.4)
JS = "jobset.sigs.k8s.io/"  # JobSet pod labels under a TrainJob (§4.2)
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
RANDOM_SUFFIX = 5  # the Job controller's pod-name suffix, counted by JobSet's webhook (§4.2)

# Default ports (§1.1, §4.3); MPI hosts are reached over ssh (§3.2).
TF_PORT = 2222
TORCH_PORT = 23456
TRAINJOB_PORT = 29500
SSH_PORT = 22
# Roles use the operators' replica-type spelling (operator-contract.md §1.1, §3, §4.1).
ROLES = ("Chief", "Master", "Worker", "PS", "Evaluator", "Launcher", "Node")
_ROLE = {r.lower(): r for r in ROLES}


def replica_id(role: str, index: int) -> str:
    """``worker-1``: a replica's name in logs and the UI, the operator's pod-name
    suffix (operator-contract.md §1.3)."""
    return f"{role.lower()}-{index}"


class RestartPolicy(str, Enum):
    NEVER = "Never"
    ON_FAILURE = "OnFailure"
    EXIT_CODE = "ExitCode"
    ALWAYS = "Always"


Key = tuple[str, int]


@dataclass(frozen=True)
class Kind(ABC):
    """What every kind has; subclasses fill in their operator's rules."""

    name: str
    group: str
    version: str
    plural: str
    operator: str  # who serves it, as messages name it (§0)
    replica_key: str | None = None  # spec.<x>ReplicaSpecs; None for TrainJob
    port: tuple[str, int] | None = None  # (name, number) declared on the container (§1.1)
    #: roles whose replicas join the collective, in node-rank order (§2.1, §2.2, §3.3, §4.3)
    rank_roles: tuple[str, ...] = ()
    #: Warning events by which its operator says it could not create a pod (§10.18)
    refusal_events: tuple[str, ...] = ("FailedCreatePod",)

    def __str__(self) -> str:
        return self.name

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def mismatch_hint(self) -> str:
        """What to do when the cluster's CRD lacks a field jupyter-ddl writes."""
        return f"jupyter-ddl writes {self.name} for {self.operator}: upgrade the operator"

    # -- the pods ---------------------------------------------------------------------
    @abstractmethod
    def container(self, role: str) -> str:
        """The container the operator looks for in a role's pods: the training one."""
        ...

    def pod_selector(self, job: str) -> str:
        """The label selector of a job's pods (what the Kubeflow SDKs use too)."""
        return f"{TK}job-name={job}"

    def pod_replica(self, pod: Mapping[str, Any]) -> Key | None:
        """(role, index) of one of the job's pods, from the operator's labels (§1.4)."""
        labels = _labels(pod)
        rtype = labels.get(f"{TK}replica-type") or labels.get(f"{TK}job-role")
        if not rtype:
            return None
        return _ROLE.get(rtype, rtype.capitalize()), int(labels.get(f"{TK}replica-index", "0"))

    @abstractmethod
    def address(self, job: str, namespace: str, role: str, index: int) -> tuple[str, int]:
        """(host, port) by which the other replicas reach replica (role, index)."""
        ...

    def derived_names(self, job: str, counts: Mapping[str, int]) -> list[str]:
        """The DNS labels the operator builds from ``job`` (pods, Services, hostnames),
        each of which must fit 63 characters (§1.3, §3.2, §4.2)."""
        return [f"{job}-{replica_id(role, n - 1)}" for role, n in counts.items() if n > 0]

    def event_objects(self, job: str) -> set[str]:
        """Names of the objects (besides pods) whose Warning events concern the job."""
        return {job}

    # -- the job ------------------------------------------------------------------------
    def expected_replicas(self, obj: Mapping[str, Any]) -> list[Key]:
        """The replicas a stored job object asks for, in role order."""
        maps = (
            ((obj.get("spec") or {}).get(self.replica_key or "") or {}) if self.replica_key else {}
        )
        out: list[Key] = []
        for role in sorted(maps, key=lambda r: ROLES.index(r) if r in ROLES else len(ROLES)):
            out += [(role, i) for i in range(int((maps[role] or {}).get("replicas", 1)))]
        return out

    def suspend_patch(self) -> dict[str, Any]:
        """The spec patch that suspends a job (§1.6, §4.1)."""
        return {"runPolicy": {"suspend": True}}

    def delete_propagation(self) -> str:
        """How deleting the job removes what it owns: in the foreground, the pods go
        before the job object does."""
        return "Foreground"

    @abstractmethod
    def default_restart(self, role: str) -> RestartPolicy:
        """A replica's restartPolicy when the spec names none (§1.1, §3.1)."""
        ...

    def refused_restart(self) -> tuple[RestartPolicy, ...]:
        """restartPolicy values this kind's operator refuses (§3.1)."""
        return ()

    @abstractmethod
    def success_needs(self, keys: Sequence[Key]) -> list[Key]:
        """The replicas whose success ends the job successfully (§1.5, §3.4, §4.4)."""
        ...


def _labels(pod: Mapping[str, Any]) -> dict[str, str]:
    return dict((pod.get("metadata") or {}).get("labels") or {})


@dataclass(frozen=True)
class TFJobKind(Kind):
    def container(self, role: str) -> str:
        return "tensorflow"  # TF_CONFIG goes into this container only (§1.9)

    def address(self, job: str, namespace: str, role: str, index: int) -> tuple[str, int]:
        # a per-replica Service, namespace-qualified in TF_CONFIG (§2.1)
        return f"{job}-{replica_id(role, index)}.{namespace}.svc", TF_PORT

    def default_restart(self, role: str) -> RestartPolicy:
        return RestartPolicy.NEVER

    def success_needs(self, keys: Sequence[Key]) -> list[Key]:
        leaders = [k for k in keys if k[0] in ("Chief", "Master")]
        return leaders or [k for k in keys if k == ("Worker", 0)]


@dataclass(frozen=True)
class PyTorchJobKind(Kind):
    def container(self, role: str) -> str:
        return "pytorch"

    def address(self, job: str, namespace: str, role: str, index: int) -> tuple[str, int]:
        return f"{job}-{replica_id(role, index)}", TORCH_PORT  # the short Service name (§2.2)

    def default_restart(self, role: str) -> RestartPolicy:
        return RestartPolicy.ON_FAILURE

    def success_needs(self, keys: Sequence[Key]) -> list[Key]:
        masters = [k for k in keys if k[0] == "Master"]
        return masters or list(keys)


@dataclass(frozen=True)
class MPIJobKind(Kind):
    """mpi-operator works on each template's first container (§3.1); ours are named
    after the role, which is how a sidecar injected beside them is told apart."""

    def container(self, role: str) -> str:
        return role.lower()

    def pod_replica(self, pod: Mapping[str, Any]) -> Key | None:
        if _labels(pod).get(f"{TK}job-role") == "launcher":  # no replica-type label (§10.6)
            return "Launcher", 0
        return super().pod_replica(pod)

    def address(self, job: str, namespace: str, role: str, index: int) -> tuple[str, int]:
        # the pod's hostname under the job's headless Service (§3.2, §3.3)
        pod = f"{job}-launcher" if role == "Launcher" else f"{job}-{replica_id(role, index)}"
        return f"{pod}.{job}.{namespace}.svc", SSH_PORT

    def derived_names(self, job: str, counts: Mapping[str, int]) -> list[str]:
        return [
            f"{job}-launcher" if role == "Launcher" else f"{job}-{replica_id(role, n - 1)}"
            for role, n in counts.items()
            if n > 0
        ]

    def event_objects(self, job: str) -> set[str]:
        return {job, f"{job}-launcher"}  # the launcher is a batch Job (§3.2)

    def default_restart(self, role: str) -> RestartPolicy:
        return RestartPolicy.ON_FAILURE if role == "Launcher" else RestartPolicy.NEVER

    def refused_restart(self) -> tuple[RestartPolicy, ...]:
        return (RestartPolicy.ALWAYS, RestartPolicy.EXIT_CODE)

    def success_needs(self, keys: Sequence[Key]) -> list[Key]:
        return [k for k in keys if k[0] == "Launcher"]


@dataclass(frozen=True)
class TrainJobKind(Kind):
    """Trainer v2's TrainJob, written for one Trainer release (§4, §4.6)."""

    release: Release = release_named(NEWEST)

    @property
    def mismatch_hint(self) -> str:
        return (
            "name the cluster's Trainer release with `%ddl config trainer_release=vX.Y.Z` "
            f"(one of {', '.join(RELEASES)})"
        )

    def for_release(self, name: str | None) -> TrainJobKind:
        """This kind for Trainer ``name`` (the newest supported when None)."""
        return replace(self, release=release_named(name or NEWEST))

    def container(self, role: str) -> str:
        return "node"  # the container each runtime job hands trainer.* to (§4.1)

    def pod_selector(self, job: str) -> str:
        return f"{JS}jobset-name={job}"

    def pod_replica(self, pod: Mapping[str, Any]) -> Key | None:
        md = pod.get("metadata") or {}
        role = _labels(pod).get(f"{JS}replicatedjob-name", "node")
        idx = _labels(pod).get(COMPLETION_INDEX) or (md.get("annotations") or {}).get(
            COMPLETION_INDEX, "0"
        )
        return _ROLE.get(role, role.capitalize()), int(idx)

    def address(self, job: str, namespace: str, role: str, index: int) -> tuple[str, int]:
        # JobSet pod <job>-<replicatedJob>-<jobIndex>-<podIndex> under the job's subdomain (§4.2)
        return f"{job}-{role.lower()}-0-{index}.{job}", TRAINJOB_PORT

    def derived_names(self, job: str, counts: Mapping[str, int]) -> list[str]:
        # JobSet's webhook checks the longest pod name, random suffix included (§4.2)
        return [
            f"{job}-{role.lower()}-0-{n - 1}-{'x' * RANDOM_SUFFIX}"
            for role, n in counts.items()
            if n > 0
        ]

    def event_objects(self, job: str) -> set[str]:
        # the Job controller reports refused pods on the JobSet's Jobs (§10.18)
        return {job, f"{job}-node-0", f"{job}-launcher-0"}

    def expected_replicas(self, obj: Mapping[str, Any]) -> list[Key]:
        nodes = int(((obj.get("spec") or {}).get("trainer") or {}).get("numNodes") or 1)
        return [("Node", i) for i in range(nodes)]

    def suspend_patch(self) -> dict[str, Any]:
        return {"suspend": True}

    def delete_propagation(self) -> str:
        # A foreground deletion ends with the garbage collector updating the TrainJob
        # (its foregroundDeletion finalizer removed) after deleting its dependents,
        # among them a TrainingRuntime of the job's own; Trainer's webhook validates
        # that update and refuses it once the runtime is gone, so the TrainJob stayed
        # Terminating for good (and the Trainer SDK's list_jobs, which reads every
        # listed job's runtime, failed for the whole namespace). In the background the
        # TrainJob goes at once, with no update, and its JobSet, pods and runtime after.
        return "Background"

    def default_restart(self, role: str) -> RestartPolicy:
        return RestartPolicy.ON_FAILURE  # JobSet's default for its Jobs (§4.2)

    def success_needs(self, keys: Sequence[Key]) -> list[Key]:
        return [k for k in keys if k[0] != "Launcher"] or list(keys)


_TO = "the Kubeflow training operator (kubeflow/trainer v1.9, kubeflow.org/v1)"
TFJOB = TFJobKind("TFJob", "kubeflow.org", "v1", "tfjobs", _TO, "tfReplicaSpecs",
                  ("tfjob-port", TF_PORT), ("Chief", "Master", "Worker"))  # fmt: skip
PYTORCHJOB = PyTorchJobKind("PyTorchJob", "kubeflow.org", "v1", "pytorchjobs", _TO,
                            "pytorchReplicaSpecs", ("pytorchjob-port", TORCH_PORT),
                            ("Master", "Worker"))  # fmt: skip
MPIJOB = MPIJobKind("MPIJob", "kubeflow.org", "v2beta1", "mpijobs",
                    "the MPI operator (kubeflow/mpi-operator v0.8, kubeflow.org/v2beta1)",
                    "mpiReplicaSpecs", rank_roles=("Worker",),
                    refusal_events=("MPIJobFailed", "FailedCreate"))  # fmt: skip
TRAINJOB = TrainJobKind("TrainJob", "trainer.kubeflow.org", "v1alpha1", "trainjobs",
                        "Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1)",
                        rank_roles=("Node",), refusal_events=("FailedCreate",))  # fmt: skip

#: every kind jupyter-ddl submits, in the order listings try them
KINDS: tuple[Kind, ...] = (TFJOB, PYTORCHJOB, MPIJOB, TRAINJOB)


def by_name(name: str) -> Kind:
    """The kind called ``name``; ValidationError naming the known ones otherwise."""
    for k in KINDS:
        if k.name == name:
            return k
    known = ", ".join(k.name for k in KINDS)
    raise ValidationError(
        tr("kind: unknown job kind {name!r}; jupyter-ddl submits {known}", name=name, known=known)
    )
