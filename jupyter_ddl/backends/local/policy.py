"""Restart, backoff and end-state rules, as the operators apply them (pure functions).

Sources: ``docs/operator-contract.md`` §1.5 (end state per kind), §1.6 (backoffLimit,
activeDeadlineSeconds), §1.7 (restartPolicy values), §3.1/§3.4 (MPIJob), §4.4 (TrainJob).
"""

from __future__ import annotations

import signal as _signal
from collections.abc import Mapping
from enum import Enum

from ...models import JobState, ReplicaState, RestartPolicy

# Replica default restartPolicy per kind (operator-contract.md §1.1, §3.1; JobSet defaults OnFailure).
_DEFAULTS = {
    "TFJob": {"*": RestartPolicy.NEVER},
    "PyTorchJob": {"*": RestartPolicy.ON_FAILURE},
    "MPIJob": {"Launcher": RestartPolicy.ON_FAILURE, "*": RestartPolicy.NEVER},
    "TrainJob": {"*": RestartPolicy.ON_FAILURE},
}


class Exit(str, Enum):
    """What to do with a replica whose process ended."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"  # for good: the job fails
    RESTART = "restart"


def restart_policy(kind: str, role: str, asked: RestartPolicy | None) -> RestartPolicy:
    """The policy a replica runs under: the spec's, else the kind's default for the role."""
    if asked is not None:
        return asked
    table = _DEFAULTS.get(kind, {"*": RestartPolicy.NEVER})
    return table.get(role, table["*"])


def on_exit(policy: RestartPolicy, exit_code: int | None, signal: int | None) -> Exit:
    """Decide after a replica's process ended (exit_code None when killed by ``signal``).

    ExitCode: 1-127 are permanent failures, >= 128 (a signal) are retried (§1.7).
    Always restarts even after success; the caller checks first whether that success
    already finished the job.
    """
    ok = signal is None and exit_code == 0
    if policy == RestartPolicy.ALWAYS:
        return Exit.RESTART
    if ok:
        return Exit.SUCCEEDED
    if policy == RestartPolicy.ON_FAILURE:
        return Exit.RESTART
    if policy == RestartPolicy.EXIT_CODE:
        retryable = signal is not None or (exit_code is not None and exit_code >= 128)
        return Exit.RESTART if retryable else Exit.FAILED
    return Exit.FAILED


def backoff_exceeded(total_restarts: int, limit: int | None) -> bool:
    """True when one more restart would pass ``backoffLimit`` (None: no limit)."""
    return limit is not None and total_restarts >= limit


def backoff_delay(restarts: int, base: float = 0.5, cap: float = 10.0) -> float:
    """Seconds to wait before restart number ``restarts + 1`` (doubling, capped),
    like the kubelet's crash-loop backoff but scaled for local runs."""
    return min(cap, base * (2 ** max(restarts, 0))) if restarts else 0.0


def deadline_passed(started: float | None, now: float, active_deadline: int | None) -> bool:
    return active_deadline is not None and started is not None and now - started > active_deadline


def job_outcome(kind: str, states: Mapping[tuple[str, int], ReplicaState]) -> JobState | None:
    """The job's end state from its replicas' states, or None while it goes on (§1.5).

    A replica that failed for good fails the job (its restarts were already decided
    by :func:`on_exit`). Success: TFJob follows Chief/Master if present, else Worker
    0; PyTorchJob follows Master, else all Workers; MPIJob follows the Launcher;
    TrainJob needs every node.
    """
    if any(s == ReplicaState.FAILED for s in states.values()):
        return JobState.FAILED
    done = {key for key, s in states.items() if s == ReplicaState.SUCCEEDED}
    roles = {role for role, _ in states}
    if kind == "TFJob":
        leaders = [k for k in states if k[0] in ("Chief", "Master")]
        needed = leaders or [k for k in states if k == ("Worker", 0)]
    elif kind == "PyTorchJob":
        needed = [k for k in states if k[0] == "Master"] if "Master" in roles else list(states)
    elif kind == "MPIJob":
        needed = [k for k in states if k[0] == "Launcher"]
    else:
        needed = [k for k in states if k[0] != "Launcher"] or list(states)
    if needed and all(k in done for k in needed):
        return JobState.SUCCEEDED
    return None


def describe_exit(exit_code: int | None, signal: int | None) -> str:
    """``exit code 1`` or ``signal 9 (SIGKILL)``."""
    if signal is not None:
        try:
            return f"signal {signal} ({_signal.Signals(signal).name})"
        except ValueError:
            return f"signal {signal}"
    return f"exit code {exit_code}"


def explain_exit(exit_code: int | None, signal: int | None, last_lines: list[str]) -> str:
    """:func:`describe_exit` plus the likely cause when the last lines show one."""
    text = describe_exit(exit_code, signal)
    tail = "\n".join(last_lines[-5:])
    if signal == _signal.SIGABRT and "terminate called without an active exception" in tail:
        return (
            text
            + " (gloo aborted at interpreter exit: end the cell with dist.destroy_process_group())"
        )
    if signal == _signal.SIGKILL or exit_code == 137:
        return text + " (killed: out of memory, or stopped from outside)"
    return text
