"""``%%distribute`` flags → a JobSpec (pure; no I/O except reading a requirements file).

Bad flags raise ValidationError with one line naming the flag and what to do, never
argparse's usage-and-exit.
"""

from __future__ import annotations

import argparse
import re
import shlex
from dataclasses import dataclass, field

from .errors import ValidationError
from .models import GangScheduling, JobSpec, Resources, RestartPolicy
from .shape import fill_counts
from .strategies import Strategy, get_strategy

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_POLICIES = {p.value.lower(): p for p in RestartPolicy}


REPLICAS_HELP = """\
--replicas N counts the replicas that train, for every strategy:
  torch-ddp, ignite, deepspeed   Master 1 + Worker N-1 (N=1: the Master alone)
  torch-elastic                  Worker N
  tf-multi-worker-mirrored       Chief + Worker = N (--chief 1: Chief 1 + Worker N-1)
  tf-parameter-server            Worker N; Chief 1, --ps and --evaluator on their own
  horovod                        Worker N MPI ranks; the launcher is not counted
  torch-dp, tf-mirrored, tf-central-storage, tf-tpu   exactly 1
  --target trainjob              Node N (and the runtime's launcher for deepspeed)
--evaluator is never counted. Each torch replica runs --nproc-per-node processes
(default: one per GPU), so the world size is N x processes per replica. --gpus is
per replica. --replicas with a role flag that disagrees (--replicas 3 --workers 5) is
refused."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise ValidationError(f"%%distribute: {message}; `%%distribute --help` lists the flags")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="%%distribute",
        add_help=False,
        description="Run this cell as a distributed training job.",
        epilog=REPLICAS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        exit_on_error=False,
        # `--worker 2` must not silently mean `--workers`: a flag added later would
        # change what stored notebooks mean.
        allow_abbrev=False,
    )
    a = p.add_argument
    a("-h", "--help", action="store_true", help="show this help")
    a("--strategy", "-s", help="strategy name (`%%ddl strategies` lists them)")
    a("--replicas", "-n", type=int, help="training replicas in total (see below)")
    a("--workers", type=int, help="Worker replicas (0 allowed for torch DDP: Master alone)")
    a("--ps", type=int, help="parameter servers (tf-parameter-server)")
    a("--chief", type=int, help="Chief replicas (0 or 1)")
    a("--evaluator", type=int, help="Evaluator replicas (0 or 1)")
    a("--gpus", type=int, default=0, help="GPUs per replica (1 replica x 1 GPU = 1 GPU)")
    a("--tpus", type=int, default=0, help="TPU chips per replica (tf-tpu)")
    a("--cpu", help="CPU per replica, a Kubernetes quantity (2, 500m)")
    a("--memory", help="memory per replica, a Kubernetes quantity (4Gi)")
    a("--image", help="container image (Kubernetes)")
    a("--backend", "-b", help="local or kubernetes (default: the configured one)")
    a("--namespace", help="Kubernetes namespace")
    a("--name", help="job name (default: generated from the notebook)")
    a("--env", action="append", default=[], metavar="K=V", help="environment variable")
    a(
        "--secret-env",
        action="append",
        default=[],
        metavar="K",
        help="pass K from the kernel's environment, value never stored",
    )
    a(
        "--requirements",
        "-r",
        action="append",
        default=[],
        help="pip requirements: a file or comma-separated names",
    )
    a(
        "--gang",
        nargs="?",
        const="volcano",
        choices=["volcano", "scheduler-plugins"],
        help="gang scheduling",
    )
    a("--queue", help="scheduler queue (implies --gang)")
    a("--priority", help="priority class (implies --gang)")
    a("--restart-policy", help="Never, OnFailure, ExitCode or Always")
    a("--backoff-limit", type=int, help="restarts before the job fails")
    a(
        "--nproc-per-node",
        type=int,
        help="torch processes per replica, under torchrun (default: its GPU count, at least 1)",
    )
    a("--dist-backend", choices=["gloo", "nccl", "mpi"], help="torch process group backend")
    a("--target", choices=["trainjob"], help="submit torch strategies as a Trainer v2 TrainJob")
    a(
        "--dry-run",
        action="store_true",
        help="print the captured script and the YAML; start nothing",
    )
    a("--wait", action="store_true", help="block until the job ends")
    a("--build-only", action="store_true", help="build and push the image only (Kubernetes)")
    a("--timeout", type=float, help="with --wait: stop waiting after this many seconds")
    return p


@dataclass
class DistributeArgs:
    """The parsed flags; ``spec_from_args`` turns them into a JobSpec."""

    strategy: str | None = None
    replicas: int | None = None
    workers: int | None = None
    ps: int | None = None
    chief: int | None = None
    evaluator: int | None = None
    gpus: int = 0
    tpus: int = 0
    cpu: str | None = None
    memory: str | None = None
    image: str | None = None
    backend: str | None = None
    namespace: str | None = None
    name: str | None = None
    env: list[str] = field(default_factory=list)
    secret_env: list[str] = field(default_factory=list)
    requirements: list[str] = field(default_factory=list)
    gang: str | None = None
    queue: str | None = None
    priority: str | None = None
    restart_policy: str | None = None
    backoff_limit: int | None = None
    nproc_per_node: int | None = None
    dist_backend: str | None = None
    target: str | None = None
    dry_run: bool = False
    wait: bool = False
    build_only: bool = False
    timeout: float | None = None
    help: bool = False


def parse_line(line: str) -> DistributeArgs:
    """Parse the magic's line; raises ValidationError naming the bad flag."""
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise ValidationError(
            f"%%distribute: cannot split the flags ({e}); check the quotes"
        ) from None
    parser = build_parser()
    try:
        ns = parser.parse_args(words)
    except argparse.ArgumentError as e:
        raise ValidationError(f"%%distribute: {e}; `%%distribute --help` lists the flags") from None
    check_repeats(parser, words, "%%distribute")
    args = DistributeArgs(**vars(ns))
    _check_timeout(args)
    return args


def check_repeats(parser: argparse.ArgumentParser, words: list[str], prog: str) -> None:
    """A flag that takes one value given twice (``--replicas 2 ... --replicas 3``) is
    refused: argparse would silently keep the last one."""
    seen: dict[str, str] = {}
    for word in words:
        if word == "--":
            break
        flag = word.split("=", 1)[0]
        action = parser._option_string_actions.get(flag)
        if action is None or isinstance(action, argparse._AppendAction):
            continue
        if action.dest in seen:
            raise ValidationError(
                f"{prog}: {seen[action.dest]} is given twice ({flag} again); give it once"
            )
        seen[action.dest] = flag


def _check_timeout(args: DistributeArgs) -> None:
    if args.timeout is None:
        return
    if not args.timeout > 0:  # also NaN
        raise ValidationError(f"--timeout {args.timeout:g}: give the seconds to wait, above 0")
    if not args.wait:
        raise ValidationError(
            f"--timeout {args.timeout:g} bounds how long --wait waits; add --wait or drop --timeout"
        )


#: parts of a variable name that say its value is a secret
_SECRET_PARTS = ("PASSWORD", "PASSWD", "TOKEN", "SECRET", "CREDENTIAL", "PRIVATE")
_SECRET_WORDS = {"KEY", "APIKEY", "PASS", "AUTH", "CREDS", "PAT"}


def secret_looking(names: list[str]) -> list[str]:
    """The ``--env`` names whose values are probably secrets (``DB_PASSWORD``,
    ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``API_KEY``): ``--env`` stores its value
    in the spec, the dry run and the manifests, ``--secret-env`` stores none."""
    out = []
    for name in names:
        upper = name.upper()
        if any(part in upper for part in _SECRET_PARTS) or _SECRET_WORDS & set(upper.split("_")):
            out.append(name)
    return out


def help_text() -> str:
    return build_parser().format_help()


_ROLE_FLAGS = {"Worker": "--workers", "PS": "--ps", "Chief": "--chief", "Evaluator": "--evaluator"}


def role_counts(strategy: Strategy, args: DistributeArgs) -> dict[str, int]:
    """Every role's count from the flags (zeros included, so no default comes back).

    ``--replicas N`` counts the replicas that train (``RoleRule.counted``): the strategy's
    fill role (Worker, or its only counted role) takes N minus the other counted roles;
    roles it does not count (PS, launcher, evaluator, the ParameterServer chief) come
    from their own flags or their defaults.
    """
    explicit = {
        "Worker": args.workers,
        "PS": args.ps,
        "Chief": args.chief,
        "Evaluator": args.evaluator,
    }
    given = {role: n for role, n in explicit.items() if n is not None}
    for role in given:
        if strategy.rule(role) is None:
            raise ValidationError(
                f"{_ROLE_FLAGS[role]}: {strategy.name} has no {role} role "
                f"(roles: {', '.join(strategy.role_names)}); drop the flag"
            )
    counts = fill_counts(strategy.name, given, None)
    if args.replicas is not None:
        fill = strategy.fill_role
        counts[fill.role] = _fill(strategy, counts, args.replicas, explicit.get(fill.role))
    return counts


def _fill(strategy: Strategy, counts: dict[str, int], total: int, given: int | None) -> int:
    """The fill role's count for ``--replicas total``; one line when it cannot be."""
    fill = strategy.fill_role
    others = {r.role: counts[r.role] for r in strategy.counted_roles if r is not fill}
    n = total - sum(others.values())
    if not fill.allows(n):
        lo = sum(others.values()) + fill.min
        hi = None if fill.max is None else sum(others.values()) + fill.max
        span = " or more" if hi is None else ("" if hi == lo else f" to {hi}")
        fixed = " + ".join(f"{r} {k}" for r, k in others.items() if k)
        shape = (
            f"{fixed} + {fill.describe()} {fill.role}"
            if fixed
            else f"{fill.describe()} {fill.role}"
        )
        raise ValidationError(
            f"--replicas {total}: {strategy.name} trains on {shape}; choose --replicas {lo}{span}"
        )
    if given is not None and given != n:
        flag = _ROLE_FLAGS.get(fill.role, fill.role)
        made = " + ".join(f"{r} {k}" for r, k in {**others, fill.role: n}.items() if k)
        raise ValidationError(
            f"--replicas {total} and {flag} {given} disagree: for {strategy.name} --replicas "
            f"{total} means {made}; give only one of them"
        )
    return n


def _env(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not _ENV_NAME.match(key):
            raise ValidationError(
                f"--env {item!r}: write it as NAME=value with NAME a valid variable name"
            )
        if key in out and out[key] != value:
            raise ValidationError(f"--env {key} is given twice with different values; give it once")
        out[key] = value
    return out


def _secret_names(items: list[str]) -> list[str]:
    for k in items:
        if not _ENV_NAME.match(k):
            raise ValidationError(
                f"--secret-env {k!r}: give the variable's NAME only (its value is read from the kernel's environment)"
            )
    return list(dict.fromkeys(items))


def _restart_policy(value: str | None) -> RestartPolicy | None:
    if value is None:
        return None
    policy = _POLICIES.get(value.lower())
    if policy is None:
        raise ValidationError(
            f"--restart-policy {value!r}: choose one of {', '.join(p.value for p in RestartPolicy)}"
        )
    return policy


def _resources(strategy: Strategy, args: DistributeArgs) -> tuple[Resources, dict[str, Resources]]:
    for flag, n in (("--gpus", args.gpus), ("--tpus", args.tpus)):
        if n < 0:
            raise ValidationError(f"{flag} {n}: give 0 or more per replica")
    default = Resources(cpu=args.cpu, memory=args.memory, gpu=args.gpus, tpu=args.tpus)
    # Roles that cannot use accelerators (PS, MPI launcher) get none rather than an error.
    per_role = {
        r.role: Resources(cpu=args.cpu, memory=args.memory)
        for r in strategy.roles
        if not r.gpu and (args.gpus or args.tpus)
    }
    return default, per_role


def _gang(args: DistributeArgs) -> GangScheduling | None:
    if not (args.gang or args.queue or args.priority):
        return None
    return GangScheduling(
        scheduler=args.gang or "volcano", queue=args.queue, priority_class=args.priority
    )


def spec_from_args(
    args: DistributeArgs, *, name: str, backend: str, notebook: str | None = None
) -> JobSpec:
    """The JobSpec these flags describe. ``name``/``backend`` are the resolved values
    (generated name, configured default backend). Raises ValidationError."""
    if not args.strategy:
        raise ValidationError(
            "--strategy is missing; add --strategy NAME (`%ddl strategies` lists them)"
        )
    strategy = get_strategy(args.strategy)
    default, per_role = _resources(strategy, args)
    return JobSpec(
        name=name,
        strategy=strategy.name,
        replicas=role_counts(strategy, args),
        resources=per_role,
        default_resources=default,
        image=args.image,
        env=_env(args.env),
        secret_env=_secret_names(args.secret_env),
        restart_policy=_restart_policy(args.restart_policy),
        backoff_limit=args.backoff_limit,
        gang=_gang(args),
        namespace=args.namespace,
        backend=backend,
        dist_backend=args.dist_backend,
        nproc_per_node=args.nproc_per_node,
        target="TrainJob" if args.target == "trainjob" else None,
        notebook=notebook,
    )
