"""What each replica asks of the cluster and where it may run: its resources, gang
scheduling, tolerations of tainted nodes and the volumes it mounts. Plain data, below
both ``JobSpec`` and its resolved shape (the shape keeps each role's ``Resources``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Resources:
    """Per-replica resources. ``cpu``/``memory`` use Kubernetes quantities ("2", "4Gi")."""

    cpu: str | None = None
    memory: str | None = None
    gpu: int = 0
    gpu_resource: str = "nvidia.com/gpu"
    tpu: int = 0
    tpu_resource: str = "google.com/tpu"


#: who makes a gang job's PodGroup: we do ("client", the default: the operators' shipped
#: deployments pass no gang flag), or the operators started with theirs ("operator")
GANG_PODGROUP_MAKERS = ("client", "operator")


@dataclass
class GangScheduling:
    """Start all replicas together or none (Volcano or the scheduler plugins)."""

    scheduler: str = "volcano"  # "volcano" | "scheduler-plugins"
    queue: str | None = None
    priority_class: str | None = None
    min_available: int | None = None
    schedule_timeout_seconds: int | None = None


@dataclass
class Toleration:
    """A Kubernetes toleration, for pods placed on tainted nodes."""

    key: str | None = None
    operator: str = "Equal"  # Equal | Exists
    value: str | None = None
    effect: str | None = None  # NoSchedule | PreferNoSchedule | NoExecute
    toleration_seconds: int | None = None


@dataclass
class VolumeMount:
    """A PersistentVolumeClaim mounted into every replica."""

    claim_name: str
    mount_path: str
    name: str | None = None
    read_only: bool = False
    sub_path: str | None = None
