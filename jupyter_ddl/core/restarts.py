"""Restart, backoff and end-state rules, as the operators apply them (pure functions).

Sources: ``docs/operator-contract.md`` §1.5 (end state per kind), §1.6 (backoffLimit,
activeDeadlineSeconds), §1.7 (restartPolicy values), §3.1/§3.4 (MPIJob), §4.4 (TrainJob).
"""

from __future__ import annotations

import signal as _signal
from collections.abc import Mapping
from enum import Enum

from jupyter_ddl.core.kinds import Kind, RestartPolicy
from jupyter_ddl.core.states import JobState, ReplicaState


class Exit(str, Enum):
    """What to do with a replica whose process ended."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"  # for good: the job fails
    RESTART = "restart"


def restart_policy(kind: Kind, role: str, asked: RestartPolicy | None) -> RestartPolicy:
    """The policy a replica runs under: the spec's, else the kind's default for the role
    (operator-contract.md §1.1, §3.1; JobSet's OnFailure for a TrainJob)."""
    return asked if asked is not None else kind.default_restart(role)


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
    # the operator's own test is ">=" (to1.9 pkg/core/job.go PastActiveDeadline)
    return active_deadline is not None and started is not None and now - started >= active_deadline


def job_outcome(kind: Kind, states: Mapping[tuple[str, int], ReplicaState]) -> JobState | None:
    """The job's end state from its replicas' states, or None while it goes on (§1.5).

    A replica that failed for good fails the job (its restarts were already decided
    by :func:`on_exit`). Success follows the replicas the kind names
    (``Kind.success_needs``): TFJob its Chief/Master, else Worker 0; PyTorchJob its
    Master, else all Workers; MPIJob its Launcher; TrainJob every node.
    """
    if any(s == ReplicaState.FAILED for s in states.values()):
        return JobState.FAILED
    needed = kind.success_needs(list(states))
    if needed and all(states[k] == ReplicaState.SUCCEEDED for k in needed):
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
