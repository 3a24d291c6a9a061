"""``%%distribute`` flags → a JobSpec (pure; no I/O except reading a requirements file).

Bad flags raise ValidationError with one line naming the flag and what to do, never
argparse's usage-and-exit.
"""

from __future__ import annotations

import re
import shlex

from jupyter_ddl.core.shape import MAX_REPLICAS, fill_counts, short_count, too_many
from jupyter_ddl.core.strategies import Strategy, get_strategy
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.i18n import tr
from jupyter_ddl.models import GangScheduling, JobSpec, Resources, RestartPolicy
from jupyter_ddl.notebook.flags import DistributeArgs, build_parser, role_flags, spec_copies

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


def parse_line(line: str) -> DistributeArgs:
    """Parse the magic's line; raises ValidationError naming the bad flag."""
    try:
        words = shlex.split(line)
    except ValueError as e:
        said = tr("cannot split the flags ({error}); check the quotes", error=e)
        raise ValidationError(f"%%distribute: {said}") from None
    args = DistributeArgs(**vars(build_parser(REPLICAS_HELP).parse_words(words)))
    _check_timeout(args)
    return args


def _check_timeout(args: DistributeArgs) -> None:
    if args.timeout is None:
        return
    if not args.timeout > 0:  # also NaN
        said = tr("give the seconds to wait, above 0")
        raise ValidationError(f"--timeout {args.timeout:g}: {said}")
    if not args.wait:
        said = tr("bounds how long --wait waits; add --wait or drop --timeout")
        raise ValidationError(f"--timeout {args.timeout:g} {said}")


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
    return build_parser(REPLICAS_HELP).format_help()


def _role_flag(role: str) -> str:
    return "--" + role_flags()[role]


def role_counts(strategy: Strategy, args: DistributeArgs) -> dict[str, int]:
    """Every role's count from the flags (zeros included, so no default comes back).

    ``--replicas N`` counts the replicas that train (``RoleRule.counted``): the strategy's
    fill role (Worker, or its only counted role) takes N minus the other counted roles;
    roles it does not count (PS, launcher, evaluator, the ParameterServer chief) come
    from their own flags or their defaults.
    """
    explicit = {role: getattr(args, dest) for role, dest in role_flags().items()}
    given = {role: n for role, n in explicit.items() if n is not None}
    for role in given:
        if strategy.rule(role) is None:
            said = tr(
                "{strategy} has no {role} role (roles: {roles}); drop the flag",
                strategy=strategy.name, role=role, roles=", ".join(strategy.role_names),
            )  # fmt: skip
            raise ValidationError(f"{_role_flag(role)}: {said}")
    counts = fill_counts(strategy.name, given, None)
    # before the fill arithmetic and every per-replica step after it
    if args.replicas is not None and args.replicas > MAX_REPLICAS:
        said = tr("above the limit of {limit}; give fewer", limit=MAX_REPLICAS)
        raise ValidationError(f"--replicas {short_count(args.replicas)}: {said}")
    huge = too_many(counts)
    if huge:
        raise ValidationError(huge)
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
        said = tr(
            "{strategy} trains on {shape}; choose --replicas {choice}",
            strategy=strategy.name, shape=shape, choice=f"{lo}{span}",
        )  # fmt: skip
        raise ValidationError(f"--replicas {total}: {said}")
    if given is not None and given != n:
        flag = _role_flag(fill.role) if fill.role in role_flags() else fill.role
        made = " + ".join(f"{r} {k}" for r, k in {**others, fill.role: n}.items() if k)
        raise ValidationError(
            tr(
                "--replicas {total} and {flag} {given} disagree: for {strategy} --replicas "
                "{total} means {made}; give only one of them",
                total=total, flag=flag, given=given, strategy=strategy.name, made=made,
            )
        )  # fmt: skip
    return n


def _env(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not _ENV_NAME.match(key):
            said = tr("write it as NAME=value with NAME a valid variable name")
            raise ValidationError(f"--env {item!r}: {said}")
        if key in out and out[key] != value:
            said = tr("is given twice with different values; give it once")
            raise ValidationError(f"--env {key} {said}")
        out[key] = value
    return out


def _secret_names(items: list[str]) -> list[str]:
    for k in items:
        if not _ENV_NAME.match(k):
            said = tr(
                "give the variable's NAME only (its value is read from the kernel's environment)"
            )
            raise ValidationError(f"--secret-env {k!r}: {said}")
    return list(dict.fromkeys(items))


def _restart_policy(value: str | None) -> RestartPolicy | None:
    if value is None:
        return None
    policy = _POLICIES.get(value.lower())
    if policy is None:
        choices = ", ".join(p.value for p in RestartPolicy)
        raise ValidationError(
            f"--restart-policy {value!r}: " + tr("choose one of {choices}", choices=choices)
        )
    return policy


def _resources(strategy: Strategy, args: DistributeArgs) -> tuple[Resources, dict[str, Resources]]:
    for flag, n in (("--gpus", args.gpus), ("--tpus", args.tpus)):
        if n < 0:
            raise ValidationError(f"{flag} {n}: " + tr("give 0 or more per replica"))
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
            "--strategy " + tr("is missing; add --strategy NAME (`%ddl strategies` lists them)")
        )
    strategy = get_strategy(args.strategy)
    default, per_role = _resources(strategy, args)
    return JobSpec(
        name=name,
        strategy=strategy.name,
        replicas=role_counts(strategy, args),
        resources=per_role,
        default_resources=default,
        env=_env(args.env),
        secret_env=_secret_names(args.secret_env),
        restart_policy=_restart_policy(args.restart_policy),
        gang=_gang(args),
        backend=backend,
        target="TrainJob" if args.target == "trainjob" else None,
        notebook=notebook,
        **{dest: getattr(args, dest) for dest in spec_copies()},
    )
