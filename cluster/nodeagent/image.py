"""What this machine stands in for when a container names an image (images are not
pulled here): an image with the project's Python first on PATH, Debian's Open MPI,
ssh client and openssh-server, set up as mpi-operator's own base images set them up,
so an MPIJob's workers run the operator's default `/usr/sbin/sshd -De` and its launcher
reaches them with `mpirun` over ssh. Kubeflow's notebook images are the exception: they
ship no sshd, ssh or MPI, and a container whose command is one of those fails to start
with the container runtime's own words.

The ssh setup each container gets, as files bind-mounted into its own mount namespace
(the machine's /etc and /root stay as they are):

- `/etc/ssh/ssh_config.d`: no host-key prompt and no known_hosts (the workers' host keys
  are unknown in advance; mpi-operator's base images turn the check off the same way),
  and quiet about it, so each rank's ssh adds no warning line to the launcher's log;
- `/etc/ssh/sshd_config.d`: `SetEnv` with the stand-in's PATH and PYTHONPATH. A rank
  started over ssh gets a fresh login environment: in a real image its `python` is on
  the default PATH; here it is the tier's interpreter, so the image says where it is;
- `/run/sshd`: sshd's privilege-separation directory, which the package's service
  script would create;
- `/root/.bashrc`: an image's plain one. bash sources it for a command run over ssh, and
  this machine's may put another Python first on PATH.
"""

from __future__ import annotations

import os
from pathlib import Path

# images (by the start of their reference) and the programs they lack
LACKING: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "kubeflownotebookswg/",
        frozenset({"/usr/sbin/sshd", "/usr/bin/ssh", "/usr/bin/mpirun", "sshd", "ssh", "mpirun"}),
    ),
)

SSH_CONFIG = (
    "# the tier's image stand-in: workers' host keys are not known in advance\n"
    "Host *\n"
    "    StrictHostKeyChecking no\n"
    "    UserKnownHostsFile /dev/null\n"
    "    LogLevel ERROR\n"
)
BASHRC = "# the tier's image stand-in: a plain root .bashrc\n"


def lacks(image: str, program: str) -> bool:
    """Whether IMAGE has no PROGRAM (an absolute path or a bare name)."""
    for prefix, missing in LACKING:
        if image.startswith(prefix) or f"/{prefix}" in image:
            return program in missing or os.path.basename(program) in missing
    return False


def start_error(image: str, argv: list[str]) -> str | None:
    """containerd's message when IMAGE cannot exec ARGV[0], else None."""
    if not argv or not lacks(image, argv[0]):
        return None
    path = argv[0]
    what = f"stat {path}" if path.startswith("/") else "executable file not found in $PATH"
    return (
        "failed to create containerd task: failed to create shim task: OCI runtime create "
        "failed: runc create failed: unable to start container process: exec: "
        f'"{path}": {what}: no such file or directory: unknown'
    )


def ssh_mounts(pod_dir: Path, path: str, pythonpath: str) -> list[tuple[str, str]]:
    """The stand-in's ssh files, written under POD_DIR: (source, target) pairs to
    bind-mount read-only in every container of an image that has ssh."""
    root = pod_dir / "image"
    client, server, run = root / "ssh_config.d", root / "sshd_config.d", root / "run-sshd"
    for d in (client, server, run):
        d.mkdir(parents=True, exist_ok=True)
        d.chmod(0o755)  # sshd refuses a privilege-separation directory others can write
    (client / "jddl.conf").write_text(SSH_CONFIG)
    env = [f'"PATH={path}"'] + ([f'"PYTHONPATH={pythonpath}"'] if pythonpath else [])
    (server / "jddl.conf").write_text(
        "# the tier's image stand-in: where its programs are, for sessions over ssh\n"
        f"SetEnv {' '.join(env)}\n"
    )
    bashrc = root / "bashrc"
    bashrc.write_text(BASHRC)
    out = [
        (str(client), "/etc/ssh/ssh_config.d"),
        (str(server), "/etc/ssh/sshd_config.d"),
        (str(run), "/run/sshd"),
    ]
    if Path("/root/.bashrc").exists():
        out.append((str(bashrc), "/root/.bashrc"))
    return out
