"""The plain data every part of the product passes around, in one import.

``JobSpec`` says what to run (``core/spec.py``, with ``core/placement.py``),
``CodeBundle`` what code to ship (``core/bundle.py``), ``JobHandle`` how to find a
submitted job again and ``JobStatus``/``ReplicaStatus`` where it stands
(``core/states.py``), and ``JobEvent`` is the one event type every backend streams
(``core/stream.py``). This module re-exports them, so callers above ``core/`` (and a
third party's backend) import one path however the classes are laid out; the one class
it holds is ``Capabilities``, what a backend can do. No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jupyter_ddl.core.bundle import CodeBundle
from jupyter_ddl.core.kinds import RestartPolicy, replica_id
from jupyter_ddl.core.placement import GangScheduling, Resources, Toleration, VolumeMount
from jupyter_ddl.core.spec import DEFAULT_BACKOFF_LIMIT, CleanPodPolicy, JobSpec
from jupyter_ddl.core.states import JobHandle, JobState, JobStatus, ReplicaState, ReplicaStatus
from jupyter_ddl.core.stream import EventKind, JobEvent, LogLine

__all__ = [
    "DEFAULT_BACKOFF_LIMIT",
    "Capabilities",
    "CleanPodPolicy",
    "CodeBundle",
    "EventKind",
    "GangScheduling",
    "JobEvent",
    "JobHandle",
    "JobSpec",
    "JobState",
    "JobStatus",
    "LogLine",
    "ReplicaState",
    "ReplicaStatus",
    "Resources",
    "RestartPolicy",
    "Toleration",
    "VolumeMount",
    "replica_id",
]


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
