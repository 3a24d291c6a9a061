"""Can the image a job would run do what its operator asks of it? Checked before
anything is created, from what the product knows without pulling the image.

An MPIJob's workers run mpi-operator's default ``sshd`` and its launcher ``mpirun``
over ssh (operator-contract.md §3.2). Kubeflow's notebook images are Ubuntu with s6,
run as uid 1000 and ship neither sshd, an ssh client nor MPI (§11.2): a worker on one
fails at container start and, with the launcher waiting for Ready workers, the job
would never end. So the notebook's own image is refused for MPI; an image named
with ``--image`` is the user's claim that it has what MPI needs, and the configured
``base_images["mpi"]`` is one that does.

A TrainJob on an MPI runtime (deepspeed-distributed) runs ``mpirun`` in the
launcher, whose ssh setup (uid 1000, keys under ``/home/mpiuser/.ssh``, sshd on port
2222) lives in the runtime's own image; ``trainer.image`` replaces the launcher's
image only (§10.19). Only an image built on the runtime's can stand in for it, and
only the user can say so: without ``--image`` the job is refused.
"""

from __future__ import annotations

from jupyter_ddl.core.shape import try_resolve
from jupyter_ddl.i18n import tr
from jupyter_ddl.models import JobSpec

#: the image Trainer's deepspeed runtime runs (kubeflow/trainer cmd/runtimes/deepspeed)
DEEPSPEED_RUNTIME_IMAGE = "ghcr.io/kubeflow/trainer/deepspeed-runtime"


def image_problems(spec: JobSpec, notebook_image: str | None, mpi_image: str | None) -> list[str]:
    """One line per image that cannot run ``spec``'s MPI over ssh, naming the way out.
    ``notebook_image``: the notebook pod's image, the default when no ``--image``;
    ``mpi_image``: the configured MPI base image, suggested as the way out."""
    shape = try_resolve(spec)
    if shape is None or spec.image:
        return []
    if shape.job_kind.name == "MPIJob" and notebook_image:
        other = tr(" (e.g. --image {image})", image=mpi_image) if mpi_image else ""
        return [
            tr(
                "image: {strategy} runs MPI over ssh, and the workers would run this "
                "notebook's image {image}, which has no sshd or mpirun (Kubeflow's "
                "notebook images ship neither); give --image with openssh-server and "
                "Open MPI{other}",
                strategy=spec.strategy,
                image=notebook_image,
                other=other,
            )
        ]
    if shape.trainjob_mpi:
        runtime = shape.trainjob_runtime
        return [
            tr(
                "image: the {runtime} runtime's launcher runs mpirun over ssh as uid 1000, set "
                "up by the runtime's own image, and a TrainJob puts our image on the launcher; "
                "give --image built FROM the runtime's image ({image} for "
                "deepspeed-distributed), or run {strategy} without --target TrainJob",
                runtime=runtime,
                image=DEEPSPEED_RUNTIME_IMAGE,
                strategy=spec.strategy,
            )
        ]
    return []
