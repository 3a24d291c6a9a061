"""The commands a replica runs: the cell's program, under torchrun or mpirun as the
strategy needs, started in the work directory (pure functions; sections refer to
``docs/operator-contract.md``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from jupyter_ddl.manifests.common import WORK_DIR
from jupyter_ddl.models import JobSpec

_PYTHON = re.compile(r"^(.*/)?python(\d(\.\d+)?)?$")


def _script_args(command: Sequence[str]) -> list[str]:
    """``python -u x.py a`` -> ``x.py a``; ``python -m m a`` -> ``-m m a``."""
    rest = list(command[1:])
    while rest and rest[0].startswith("-") and rest[0] != "-m":
        rest.pop(0)
    return rest


def is_python(command: Sequence[str]) -> bool:
    return bool(command) and bool(_PYTHON.match(command[0]))


def torchrun(command: Sequence[str]) -> list[str]:
    """The same program under torchrun, which reads the PET_* variables (§2.2, §4.3)."""
    return ["torchrun", *_script_args(command)] if is_python(command) else list(command)


def mpirun(
    command: Sequence[str],
    ranks: int,
    *,
    hostfile: str | None = None,
    forward: Sequence[str] = (),
) -> list[str]:
    """mpirun over every slot; root is allowed because framework images run as root.

    Remote ranks start through ssh in a fresh login environment, and Open MPI hands
    them only ``OMPI_*`` and what ``-x`` names (operator-contract.md §11.3): every
    variable of ``forward`` is named, by name only, so its value (a secret's too)
    goes from the launcher's environment and never into argv."""
    head = ["mpirun", "--allow-run-as-root", "-np", str(ranks)]
    if hostfile:
        head += ["--hostfile", hostfile]
    head += ["-bind-to", "none", "-map-by", "slot", "-x", "PYTHONUNBUFFERED=1"]
    for n in dict.fromkeys(forward):
        head += ["-x", n]
    return head + list(command)


def launch_command(spec: JobSpec, command: Sequence[str]) -> list[str]:
    """The training container's command: ``spec.command`` or ``command``, wrapped in
    torchrun when a replica runs several processes or rendezvous is elastic."""
    base = list(spec.command or command)
    return torchrun(base) if spec.shape.torchrun else base


def in_work_dir(command: Sequence[str]) -> list[str]:
    """``command`` started in ``WORK_DIR``, for containers whose ``workingDir`` we may
    not set (a TrainJob's: neither ``trainer`` nor its pod patches have the field)."""
    return ["sh", "-c", 'cd "$0" && exec "$@"', WORK_DIR, *command]
