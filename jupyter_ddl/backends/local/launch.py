"""What each local replica runs and with which environment (pure: no I/O).

The environment is the operator's (``jupyter_ddl.core.contract.replica_env``) with the
host names replaced by 127.0.0.1 and free ports, plus what a single shared host
needs: a disjoint ``CUDA_VISIBLE_DEVICES`` slice, the requirements directory on
``PYTHONPATH`` and the strategy name for the runtime shim.

From the kernel's own environment a replica gets only what a pod would have too
(``BASE_ENV``: paths, locale, the interpreter's and the accelerator libraries'
settings, proxies), the names listed in the ``local_env_passthrough`` setting, and
the ``--secret-env`` names: a token set in the notebook reaches no replica that did
not ask for it, and code that needs a variable fails here as it would on a cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from jupyter_ddl.core import contract
from jupyter_ddl.models import JobSpec
from jupyter_ddl.runtime.ddl_runtime import DIST_BACKEND_ENV, STRATEGY_ENV

TEARDOWN_ENV = "JUPYTER_DDL_TEARDOWN_TIMEOUT"  # read by runtime/ddl_runtime_end.py

# The kernel's variables every replica keeps (README, "The environment of a local
# replica"): where programs, home, temporary files and the interpreter are, the
# locale, the accelerator and threading libraries' settings, and the proxies.
BASE_ENV = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
    "PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONUTF8", "PYTHONIOENCODING",
    "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONWARNINGS", "VIRTUAL_ENV",
    "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "LD_LIBRARY_PATH",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
})  # fmt: skip
BASE_ENV_PREFIXES = ("LC_", "CUDA_", "NCCL_", "OMP_", "MKL_", "KMP_", "OPENBLAS_", "TF_CPP_")

# Inherited variables that would confuse a replica about its place in the job: the
# submitter may itself run under torchrun, mpirun or a TF cluster.
_INHERITED_DROP_PREFIXES = ("PET_", "OMPI_", "PMIX_", "TORCHELASTIC_", "K_MPI_")
_INHERITED_DROP = {
    "TF_CONFIG", "MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK",
    "LOCAL_WORLD_SIZE", "GROUP_RANK", "CUDA_VISIBLE_DEVICES", "JUPYTER_DDL_STRATEGY",
}  # fmt: skip


@dataclass(frozen=True)
class Launch:
    """One replica: ``argv`` None means it has no process of its own (an MPI worker,
    whose ranks the launcher's mpirun starts)."""

    role: str
    index: int
    argv: list[str] | None
    env: dict[str, str]

    @property
    def rid(self) -> str:
        return contract.rid(self.role, self.index)


def inherited_env(
    environ: Mapping[str, str], passthrough: Iterable[str] = (), secrets: Iterable[str] = ()
) -> dict[str, str]:
    """What a replica keeps of the submitter's environment: ``BASE_ENV`` and the
    ``passthrough`` names, minus anything that places a process in a job, plus the
    ``secrets`` (``--secret-env`` names) that are set."""
    named = set(passthrough)
    out = {
        k: v
        for k, v in environ.items()
        if (k in BASE_ENV or k in named or k.startswith(BASE_ENV_PREFIXES))
        and k not in _INHERITED_DROP
        and not k.startswith(_INHERITED_DROP_PREFIXES)
    }
    out.update({k: environ[k] for k in secrets if k in environ})
    return out


def job_environ(
    environ: Mapping[str, str], passthrough: Iterable[str] = (), secrets: Iterable[str] = ()
) -> dict[str, str]:
    """What the kernel hands a job's supervisor (cold or warm): what its replicas may
    keep (``inherited_env``) and the kernel's ``CUDA_VISIBLE_DEVICES``, the GPUs the
    supervisor may share out. Nothing else of the kernel's environment leaves it, so no
    replica finds it in its parent's ``/proc/<pid>/environ`` either."""
    env = inherited_env(environ, passthrough, secrets)
    if "CUDA_VISIBLE_DEVICES" in environ:
        env["CUDA_VISIBLE_DEVICES"] = environ["CUDA_VISIBLE_DEVICES"]
    return env


def mpirun_argv(
    spec: JobSpec, python: str, entry: str, hostfile: str, *, as_root: bool, env: Mapping[str, str]
) -> list[str]:
    """mpirun over the local hostfile, output tagged per rank so logs split by worker."""
    ranks = spec.shape.world_size
    argv = ["mpirun", "--hostfile", hostfile, "-n", str(ranks), "--oversubscribe"]
    argv += ["--tag-output", "--bind-to", "none"]
    if as_root:
        argv.append("--allow-run-as-root")
    exported = ("MASTER_ADDR", "MASTER_PORT", "PYTHONPATH", STRATEGY_ENV, "PYTHONUNBUFFERED")
    for name in (*exported, TEARDOWN_ENV, *spec.secret_env):
        if name in env:  # mpirun warns about exporting an unset name
            argv += ["-x", name]
    return argv + [python, "-u", entry]


def rdzv_conf(asked: str, rid: str) -> str:
    """An elastic replica's ``--rdzv-conf``: the user's settings (``last_call_timeout=2``...)
    and who hosts the store. Every agent's rendezvous endpoint is 127.0.0.1, so each
    would think it is the host and try to bind the store's port: worker-0 is named
    the one host, unless the user's settings already say."""
    parts = [p for p in asked.split(",") if p.strip()]
    if not any(p.split("=", 1)[0].strip() == "is_host" for p in parts):
        parts.append(f"is_host={'true' if rid == 'worker-0' else 'false'}")
    return ",".join(parts)


def replica_argv(spec: JobSpec, role: str, python: str, entry: str) -> list[str]:
    """The command of a process replica (not MPI): python, or torchrun when a replica
    runs several processes (nprocPerNode > 1, elastic, or a TrainJob)."""
    if spec.command:
        return list(spec.command)
    if spec.shape.torchrun:
        # torchrun reads the PET_* variables the operator injects (operator-contract.md §2.2, §4.3)
        return [python, "-m", "torch.distributed.run", entry]
    return [python, "-u", entry]


def plan(
    spec: JobSpec,
    *,
    python: str,
    entry: str,
    hostfile: str,
    endpoints: contract.Endpoints,
    gpus: Mapping[str, str],
    environ: Mapping[str, str],
    passthrough: Iterable[str] = (),
    pythonpath: str = "",
    mpi_port: int = 0,
    as_root: bool = False,
    marker: tuple[str, str] | None = None,
    teardown_timeout: float | None = None,
) -> list[Launch]:
    """Every replica's command and environment, in ``spec.shape.replicas`` order.

    ``environ`` is the submitter's environment (filtered by ``inherited_env``);
    ``marker`` a (name, value) every replica carries so its processes can be found.
    When a launcher runs mpirun (MPIJob, or a TrainJob with an MPI runtime) its hosts
    have no process of their own: their ranks are the launcher's.
    """
    shape = spec.shape
    hosts = shape.mpi_hosts
    base = inherited_env(environ, passthrough, spec.secret_env)
    out = []
    for role, index in shape.replica_ids:
        rid = contract.rid(role, index)
        env = {**base, **spec.env, **contract.replica_env(spec, role, index, endpoints)}
        env.update(
            PYTHONUNBUFFERED="1",
            CUDA_VISIBLE_DEVICES=gpus.get(rid, ""),
            JUPYTER_DDL_JOB=spec.name,
            JUPYTER_DDL_REPLICA=rid,
        )
        env[STRATEGY_ENV] = spec.strategy
        if marker is not None:
            env[marker[0]] = marker[1]
        if teardown_timeout is not None:
            env[TEARDOWN_ENV] = f"{teardown_timeout:g}"
        if shape.elastic_bounds is not None:
            env["PET_RDZV_CONF"] = rdzv_conf(spec.env.get("PET_RDZV_CONF", ""), rid)
        if spec.dist_backend:
            env[DIST_BACKEND_ENV] = spec.dist_backend
        if pythonpath:
            env["PYTHONPATH"] = pythonpath + (
                ":" + base["PYTHONPATH"] if base.get("PYTHONPATH") else ""
            )
        argv: list[str] | None
        if hosts is not None and role == hosts:
            argv = None  # its ranks run under the launcher's mpirun
        elif hosts is not None:
            env["OMPI_MCA_orte_default_hostfile"] = hostfile
            env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(mpi_port))
            env["CUDA_VISIBLE_DEVICES"] = ",".join(
                g for r, g in gpus.items() if r in shape.mpi_host_ids and g
            )
            argv = (
                list(spec.command)
                if spec.command
                else mpirun_argv(spec, python, entry, hostfile, as_root=as_root, env=env)
            )
        else:
            argv = replica_argv(spec, role, python, entry)
        out.append(Launch(role, index, argv, env))
    return out
