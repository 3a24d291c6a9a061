"""Job spec validation: one message per problem, naming the field and what to do.

``problems(spec)`` returns every problem found (empty when the spec is good);
``validate(spec)`` raises ``ValidationError`` listing them all. The rules come from the
strategy catalog and from what the operators and the API server refuse
(``docs/operator-contract.md`` §1.2, §3.1, §4.1), so a bad job fails here, in the
notebook, rather than as a Warning Event nobody reads (§10.7).
"""

from __future__ import annotations

from collections.abc import Callable

from jupyter_ddl.core import kinds, names
from jupyter_ddl.core.shape import count_problems, too_many
from jupyter_ddl.core.strategies import CATALOG, Strategy
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.i18n import tr
from jupyter_ddl.models import JobSpec
from jupyter_ddl.validation.kube import (
    env_problems,
    metadata_problems,
    operator_env_problems,
    placement_problems,
)
from jupyter_ddl.validation.resources import resource_problems, torch_option_problems
from jupyter_ddl.validation.run_policy import gang_problems, run_policy_problems

TARGETS = (kinds.TRAINJOB.name,)


def problems(spec: JobSpec) -> list[str]:
    """Every problem of ``spec``, each one line: ``field: cause; what to do``."""
    strategy = CATALOG.get(spec.strategy)
    if strategy is None:
        known = ", ".join(CATALOG)
        said = tr(
            "unknown strategy {name!r}; choose one of: {known}", name=spec.strategy, known=known
        )
        return [f"strategy: {said}"]
    huge = too_many(spec.replicas)
    if huge:  # before every check that works per replica
        return [huge]
    out = _name_syntax(spec) + _replicas(spec, strategy) + _target(spec, strategy)
    if not out:  # these need a good name, sane counts and a known job kind
        out += _name_length(spec)
        out += operator_env_problems(spec)
    checks: list[Callable[[JobSpec, Strategy], list[str]]] = [
        resource_problems,
        torch_option_problems,
        run_policy_problems,
        gang_problems,
        env_problems,
        placement_problems,
        metadata_problems,
    ]
    for check in checks:
        out += check(spec, strategy)
    return out


def validate(spec: JobSpec) -> None:
    """Raise ValidationError listing every problem of ``spec``; return when it is good."""
    found = problems(spec)
    if found:
        raise ValidationError(found)


# -- name and counts -------------------------------------------------------------
def _name_syntax(spec: JobSpec) -> list[str]:
    if not spec.name:
        return ["name: " + tr("the job has no name; give one or let jupyter-ddl generate it")]
    if not names.is_dns1035_label(spec.name):
        said = tr(
            "{name!r} is not a DNS-1035 label; use lowercase letters, digits and '-', start "
            "with a letter, end with a letter or digit, at most 63 characters",
            name=spec.name,
        )
        return [f"name: {said}"]
    return []


def _name_length(spec: JobSpec) -> list[str]:
    longest = names.longest_derived(spec.name, spec.shape.job_kind, spec.shape.counts)
    if len(longest) > names.MAX_LABEL:
        room = names.MAX_LABEL - (len(longest) - len(spec.name))
        said = tr(
            "{name!r} is too long: the operator names a replica {longest!r} ({n} > 63 "
            "characters); shorten the name to at most {room} characters",
            name=spec.name, longest=longest, n=len(longest), room=room,
        )  # fmt: skip
        return [f"name: {said}"]
    return []


def _replicas(spec: JobSpec, strategy: Strategy) -> list[str]:
    out = count_problems(strategy, spec.replicas, spec.target in TARGETS)
    if not out and spec.shape.total == 0:
        out.append(
            "replicas: " + tr("the job has no replicas; give at least one role a count of 1")
        )
    return out


def _target(spec: JobSpec, strategy: Strategy) -> list[str]:
    out = []
    if spec.target is not None and spec.target not in TARGETS:
        out.append(
            tr(
                "target: unknown target {target!r}; leave it empty (runs as {kind}) "
                "or set {trainjob!r} for a Kubeflow Trainer v2 job",
                target=spec.target,
                kind=strategy.kind,
                trainjob=kinds.TRAINJOB.name,
            )
        )
    elif spec.target in TARGETS and strategy.trainjob_runtime is None:
        able = ", ".join(s.name for s in CATALOG.values() if s.trainjob_runtime)
        out.append(
            tr(
                "target: {strategy} cannot run as a TrainJob (Trainer v2 has no runtime for it); "
                "leave target empty (it runs as {kind}) or use one of: {able}",
                strategy=strategy.name,
                kind=strategy.kind,
                able=able,
            )
        )
    if spec.runtime_ref is not None and spec.target not in TARGETS:
        out.append(
            tr(
                "runtime_ref: only a TrainJob references a runtime; set target='TrainJob' or drop it"
            )
        )
    elif spec.runtime_ref is not None and not names.is_dns1123_subdomain(spec.runtime_ref):
        out.append(
            tr(
                "runtime_ref: {name!r} is not a valid runtime name; use a lowercase DNS name",
                name=spec.runtime_ref,
            )
        )
    return out
