"""MPIJob (kubeflow.org/v2beta1, mpi-operator) for Horovod over MPI (operator-contract.md §3).

The launcher runs ``mpirun`` over every worker slot; workers run no command, so the
operator starts ``sshd -De`` in them (§3.2) and the launcher reaches them over SSH.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..models import JobSpec
from . import common

DEFAULT_SSH_PATH = "/root/.ssh"  # framework images (horovod/horovod) run as root


def build(
    spec: JobSpec,
    *,
    image: str,
    command: Sequence[str],
    code_digest: str | None,
    code_configmap: str | None,
    code_paths: Sequence[str] | None = None,
) -> dict[str, Any]:
    shape = spec.shape
    kind = shape.job_kind
    program = list(spec.command or command)
    replicas = {}
    for role, n in shape.counts.items():
        launcher = role == "Launcher"
        cmd = common.mpirun(program, shape.world_size) if launcher else None
        c = common.container(spec, role, kind.container(role), image, cmd, code_configmap)
        template = common.pod_template(
            spec,
            role,
            [c],
            code_digest=code_digest,
            code_configmap=code_configmap,
            code_paths=code_paths,
        )
        # mpi-operator accepts only Never/OnFailure (§3.1); its defaults differ per role
        policy = common.restart_policy(spec, kind.default_restart(role).value)
        replicas[role] = common.replica_spec(n, policy, template)
    return {
        "apiVersion": kind.api_version,
        "kind": kind.name,
        "metadata": common.metadata(spec, code_digest),
        "spec": {
            "slotsPerWorker": spec.slots_per_worker,
            "runPolicy": common.run_policy(spec),
            "mpiImplementation": "OpenMPI",
            "sshAuthMountPath": spec.backend_options.get("ssh_auth_mount_path", DEFAULT_SSH_PATH),
            # the launcher's ssh would fail against workers whose sshd is not up yet
            "launcherCreationPolicy": "WaitForWorkersReady",
            str(kind.replica_key): replicas,
        },
    }
