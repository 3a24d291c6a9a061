"""GPUs on this machine and their split across replicas.

The operators set no ``CUDA_VISIBLE_DEVICES``: on a cluster each pod sees only the
GPUs it was given. Local replicas share one host, so the backend partitions the
GPUs itself: replica k gets its own disjoint slice of the size it asked for (GPUs are
per replica: 2 replicas x 1 GPU need 2), and a replica asking for none sees none (as a
pod without a GPU limit would).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

from jupyter_ddl.errors import ResourceError
from jupyter_ddl.i18n import tr


def detect_gpus() -> list[str]:
    """GPU ids usable here: ``CUDA_VISIBLE_DEVICES`` if set, else what nvidia-smi lists.

    Cheap on machines without NVIDIA tools (no subprocess, no torch import).
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [g.strip() for g in visible.split(",") if g.strip() and g.strip() != "-1"]
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run(
            [smi, "--query-gpu=index", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip().isdigit()]


def assign_gpus(requests: Sequence[tuple[str, int]], available: Sequence[str]) -> dict[str, str]:
    """Replica id -> ``CUDA_VISIBLE_DEVICES`` value, in request order, disjoint.

    Raises ResourceError when the replicas ask for more GPUs than ``available``.
    """
    wanted = sum(n for _, n in requests)
    if wanted > len(available):
        asking = [(rid, n) for rid, n in requests if n]
        if len({n for _, n in asking}) == 1:
            each = tr("{n} per replica x {count}", n=asking[0][1], count=len(asking))
            who = f"{each}: " + ", ".join(r for r, _ in asking)
        else:
            who = ", ".join(f"{rid}: {n}" for rid, n in asking)
        have = f"{len(available)}" + (f" (GPU {', '.join(available)})" if available else "")
        raise ResourceError(
            tr(
                "the job asks for {wanted} GPUs ({who}) but this machine has {have}",
                wanted=wanted,
                who=who,
                have=have,
            ),  # fmt: skip
            hint=tr("lower --replicas or --gpus, or submit to a cluster backend"),
        )
    out: dict[str, str] = {}
    pos = 0
    for rid, n in requests:
        out[rid] = ",".join(available[pos : pos + n])
        pos += n
    return out
