"""What the fake cluster does to particular pods and images (a test sets these), and the
start failure the kubelet reports when a container's command cannot be run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Scenario:
    """What the fake cluster does to pods whose name contains a key."""

    unschedulable: dict[str, str] = field(default_factory=dict)  # pod part -> message
    image_pull: set[str] = field(default_factory=set)  # pod parts whose image never pulls
    oom: set[str] = field(default_factory=set)  # exit 137 reported as OOMKilled
    restart_backoff: float = 0.3
    #: pod part -> seconds before the kubelet starts that pod's crashed container again
    #: (a slow node, an image pulled again): meanwhile it shows the run that ended
    restart_after: dict[str, float] = field(default_factory=dict)
    #: seconds each pod's image pull takes (the pod is Pending, ContainerCreating)
    pull_seconds: float = 0.0
    #: nodes pods are spread over, round robin (one node: nothing is ever multi-attached)
    nodes: list[str] = field(default_factory=lambda: ["node-0"])
    #: images (by reference part) no node can pull: an init container on one holds its
    #: pod in Init:ImagePullBackOff (e.g. training-operator's ``alpine:3.10``)
    unpullable_images: set[str] = field(default_factory=set)
    #: images (by reference part) without sshd: an MPI host's default ``/usr/sbin/sshd``
    #: fails to start on one, as containerd reports it (a notebook image, say)
    no_sshd_images: set[str] = field(default_factory=set)
    #: Volcano PodGroups (by name) the scheduler cannot admit: they stay Pending
    gang_pending: set[str] = field(default_factory=set)

    def match(self, pod: str, keys: Any) -> Any:
        return next((k for k in keys if k in pod), None)


class StartFailed(Exception):
    """The container runtime could not start the container's command."""
