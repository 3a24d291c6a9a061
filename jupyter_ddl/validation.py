"""Job spec validation (first cut; the foundation work extends it)."""

from __future__ import annotations

from .errors import ValidationError
from .models import JobSpec
from .strategies import get_strategy


def problems(spec: JobSpec) -> list[str]:
    strategy = get_strategy(spec.strategy)
    out = []
    for role, n in spec.replicas.items():
        rule = strategy.rule(role)
        if rule is None:
            out.append(
                f"replicas.{role}: {spec.strategy} has no {role} role; roles: {', '.join(strategy.role_names)}"
            )
        elif not rule.allows(n):
            out.append(f"replicas.{role}: {spec.strategy} needs {rule.describe()} {role}, got {n}")
    return out


def validate(spec: JobSpec) -> None:
    found = problems(spec)
    if found:
        raise ValidationError(found)
