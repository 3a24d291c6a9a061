"""MPIJob (kubeflow.org/v2beta1, mpi-operator) for Horovod over MPI (operator-contract.md §3).

The launcher runs ``mpirun`` over every worker slot; workers run no command, so the
operator starts ``sshd -De`` in them (§3.2) and the launcher reaches them over SSH.
"""

from __future__ import annotations

from typing import Any

from jupyter_ddl.manifests import commands, common
from jupyter_ddl.models import JobSpec

DEFAULT_SSH_PATH = "/root/.ssh"  # framework images (horovod/horovod) run as root


def build(spec: JobSpec, code: common.Code) -> dict[str, Any]:
    shape = spec.shape
    launcher = commands.mpirun(
        list(spec.command or code.command), shape.world_size, forward=common.env_names(spec)
    )

    def command_of(role: str) -> list[str] | None:
        return launcher if role == "Launcher" else None  # workers: the operator's sshd

    # mpi-operator accepts only Never/OnFailure (§3.1); its defaults differ per role
    replicas = common.replica_specs(spec, code, command_of)
    return common.job_object(
        spec,
        code,
        {
            "slotsPerWorker": spec.slots_per_worker,
            "runPolicy": common.run_policy(spec),
            "mpiImplementation": "OpenMPI",
            "sshAuthMountPath": spec.backend_options.get("ssh_auth_mount_path", DEFAULT_SSH_PATH),
            # the launcher's ssh would fail against workers whose sshd is not up yet
            "launcherCreationPolicy": "WaitForWorkersReady",
            str(shape.job_kind.replica_key): replicas,
        },
    )
