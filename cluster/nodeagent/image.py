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

Kubeflow Trainer's deepspeed runtime image (`ghcr.io/kubeflow/trainer/deepspeed-runtime`,
kubeflow/trainer v2.3.0 `cmd/runtimes/deepspeed/Dockerfile`, its ssh files copied from
mpi-operator's `mpioperator/base`) has a user `mpiuser` (uid and gid 1000, home
/home/mpiuser, the WORKDIR and `HOME`), and in that home the `.sshd_config` its runtime
starts sshd with as uid 1000: port 2222, the host key from the mounted Secret, no strict
modes; its client config connects to port 2222. An image stands in for it when its
repository's last path component is `deepspeed-runtime` or starts with
`deepspeed-runtime-` (`ghcr.io/kubeflow/trainer/deepspeed-runtime:v2.3.0`,
`registry.example/team/deepspeed-runtime-ours:1`: an image built FROM the runtime's says
so in its name). Its containers get, besides the ssh files above, their own /etc/passwd
and /etc/group (this machine's, with `mpiuser` at 1000 in place of whatever held it) and
their own writable /home/mpiuser holding that `.sshd_config` (plus the stand-in's
`SetEnv`, as above: sshd started with `-f` reads no other file) and a plain `.bashrc`.
Other images keep this machine's users.
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

# Trainer's deepspeed runtime image: its user and sshd port
RUNTIME_USER, RUNTIME_UID, RUNTIME_HOME, RUNTIME_PORT = "mpiuser", 1000, "/home/mpiuser", 2222
SSHD_CONFIG = (
    "# mpioperator/base's .sshd_config, as the deepspeed runtime image copies it\n"
    f"PidFile {RUNTIME_HOME}/sshd.pid\n"
    f"HostKey {RUNTIME_HOME}/.ssh/id_rsa\n"
    "StrictModes no\n"
    f"Port {RUNTIME_PORT}\n"
)


def is_deepspeed_runtime(image: str) -> bool:
    """Whether IMAGE is Trainer's deepspeed runtime image or names itself built on it."""
    repo = image.split("@", 1)[0]
    last = repo.rsplit("/", 1)[-1].split(":", 1)[0]
    return last == "deepspeed-runtime" or last.startswith("deepspeed-runtime-")


def image_env(image: str) -> dict[str, str]:
    """The stand-in image's own `ENV` (under the container's `env`)."""
    return {"HOME": RUNTIME_HOME} if is_deepspeed_runtime(image) else {}


def workdir(image: str) -> str | None:
    """The stand-in image's `WORKDIR`, where it has one."""
    return RUNTIME_HOME if is_deepspeed_runtime(image) else None


def passwd_text(image: str) -> str:
    """The image's /etc/passwd as the stand-in shows it."""
    machine = Path("/etc/passwd").read_text()
    if not is_deepspeed_runtime(image):
        return machine
    return _replaced(
        machine, f"{RUNTIME_USER}:x:{RUNTIME_UID}:{RUNTIME_UID}::{RUNTIME_HOME}:/bin/bash"
    )


def _replaced(text: str, entry: str) -> str:
    """TEXT (passwd or group) without the entries holding ENTRY's name or id, plus ENTRY."""
    name, _, ident = entry.split(":")[:3]
    keep = [
        ln
        for ln in text.splitlines()
        if ln.split(":")[0] != name and (ln.split(":") + ["", "", ""])[2] != ident
    ]
    return "\n".join([*keep, entry]) + "\n"


def user_mounts(
    pod_dir: Path, tag: str, image: str, path: str, pythonpath: str
) -> list[tuple[str, str, bool]]:
    """The deepspeed runtime stand-in's users and home, written under POD_DIR for the
    container TAG: (source, target, read-only) to bind-mount; none for other images."""
    if not is_deepspeed_runtime(image):
        return []
    root = pod_dir / f"image-{tag}"
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    (root / "passwd").write_text(passwd_text(image))
    group = Path("/etc/group").read_text()
    (root / "group").write_text(_replaced(group, f"{RUNTIME_USER}:x:{RUNTIME_UID}:"))
    env = [f'"PATH={path}"'] + ([f'"PYTHONPATH={pythonpath}"'] if pythonpath else [])
    (home / ".sshd_config").write_text(
        SSHD_CONFIG
        + "# the tier's stand-in: where its programs are\n"
        + f"SetEnv {' '.join(env)}\n"
    )
    (home / ".bashrc").write_text("# the tier's image stand-in: a plain .bashrc\n")
    for p in (home, home / ".sshd_config", home / ".bashrc"):
        os.chown(p, RUNTIME_UID, RUNTIME_UID)
    return [
        (str(root / "passwd"), "/etc/passwd", True),
        (str(root / "group"), "/etc/group", True),
        (str(home), RUNTIME_HOME, False),
    ]


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


def ssh_mounts(pod_dir: Path, path: str, pythonpath: str, image: str = "") -> list[tuple[str, str]]:
    """The stand-in's ssh files, written under POD_DIR: (source, target) pairs to
    bind-mount read-only in every container of an image that has ssh."""
    ds = is_deepspeed_runtime(image)
    root = pod_dir / ("image-deepspeed" if ds else "image")
    client, server, run = root / "ssh_config.d", root / "sshd_config.d", root / "run-sshd"
    for d in (client, server, run):
        d.mkdir(parents=True, exist_ok=True)
        d.chmod(0o755)  # sshd refuses a privilege-separation directory others can write
    port = f"    Port {RUNTIME_PORT}\n" if ds else ""
    (client / "jddl.conf").write_text(SSH_CONFIG + port)
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
