"""Which replica's failure caused a job's failure, and which failures followed from it
(pure: no I/O).

When one rank of a collective dies, its peers fail a moment later with an error about
the connection ("Connection closed by peer", an aborted NCCL communicator...). Those
errors are *consequences*; the user needs the rank that failed first and the end of
its own traceback. ``diagnose`` takes each replica's state, failure time and last
lines and answers with the root cause and the consequences; both backends compose the
job's message from it, and the dashboard, ``%ddl status`` and the saved record show it.

A cancelled job's peers print the same kind of errors while they are being stopped:
the local supervisor writes ``CANCEL_MARKER`` into every replica's log before it
stops anything, and what follows that line is *teardown*, not a failure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from jupyter_ddl.core.states import ReplicaStatus

#: the line the supervisor writes into each replica's log when a cancel begins
CANCEL_MARKER = "jupyter-ddl: cancel requested; what follows is teardown, not a failure"

#: how many lines of the root cause's own traceback are kept
TAIL = 12

_STOPPED = "stopped from outside by a signal"

# A peer's failure seen from the other side, by the transports the strategies use.
# Each pattern names the symptom shown beside a consequence.
_SECONDARY: list[tuple[str, re.Pattern[str]]] = [
    (label, re.compile(pattern, re.IGNORECASE))
    for label, pattern in (
        # gloo (torch on CPU): the peer's socket closed or reset mid-collective
        ("Connection closed by peer", r"Connection closed by peer"),
        ("Connection reset by peer", r"Connection reset by peer"),
        ("Broken pipe", r"\bBroken pipe\b"),
        ("gloo timed out waiting for a peer", r"gloo.*Timed out waiting"),
        # NCCL, in ProcessGroupNCCL's and NCCL's own words
        ("NCCL communicator was aborted", r"NCCL communicator was aborted"),
        ("NCCL watchdog timeout", r"Watchdog caught collective operation timeout"),
        ("NCCL operations failed or timed out", r"Some NCCL operations have failed or timed out"),
        (
            "NCCL remote error",
            r"ncclRemoteError|remote process exited or there was a network error",
        ),
        ("NCCL tore the process down", r"we are taking the entire process down"),
        # the c10d store lost its host (the master)
        ("store connection lost", r"failed to recv, got 0 bytes|DistNetworkError"),
        # C++ aborts after a collective error
        ("terminate called", r"terminate called (after throwing|without an active exception)"),
        # TensorFlow collectives and gRPC
        ("TensorFlow collective aborted", r"Collective ops is aborted by"),
        ("gRPC peer unavailable", r"UnavailableError.*(Socket closed|failed to connect)"),
        # torchrun's agent was sent SIGTERM (its pod deleted as the job failed): a
        # process stopped from outside, not the failure that ended the job
        (_STOPPED, r"SignalException: Process \d+ got signal"),
        # MPI and Horovod: the launcher or a peer reporting someone else's exit
        ("mpirun saw a rank exit", r"mpirun (noticed|detected) that|Primary job +terminated"),
        ("a rank called MPI_ABORT", r"MPI_ABORT was invoked on rank"),
        ("Horovod shut down", r"Horovod has been shut down|HorovodInternalError"),
    )
]

_TRACEBACK = "Traceback (most recent call last):"


@dataclass(frozen=True)
class ReplicaOutcome:
    """What ``diagnose`` needs of one replica."""

    id: str  # "worker-0"
    state: str  # ReplicaState value
    rank: int | None = None
    ended: float | None = None  # when its process ended; None when unknown
    lines: Sequence[str] = ()  # its last lines of output, oldest first
    exit_code: int | None = None
    signal: int | None = None
    message: str | None = None  # how the backend explained its end ("OOMKilled")
    order: int = 0  # its place in the job: breaks ties of equal failure times

    @property
    def label(self) -> str:
        return self.id if self.rank is None else f"{self.id} · rank {self.rank}"


@dataclass(frozen=True)
class Failure:
    replica: str
    label: str  # "worker-0 · rank 1"
    rank: int | None
    summary: str  # "ValueError: boom", else how it ended ("exit code 1")
    tail: list[str]  # the end of its own traceback (or its last lines)
    symptom: str | None  # why it reads as a consequence ("Connection closed by peer")
    exception: str | None = None  # the exception line of its own traceback
    ended: float | None = None


@dataclass(frozen=True)
class Diagnosis:
    root: Failure | None
    consequences: list[Failure] = field(default_factory=list)

    @property
    def line(self) -> str:
        """One line: the root cause first, then what followed from it."""
        if self.root is None:
            return ""
        text = f"{self.root.label} failed first: {self.root.summary}"
        if self.root.exception is None and self.root.tail:  # no exception: what it said last
            text += f" (last lines: {' | '.join(t.strip() for t in self.root.tail[-3:])})"
        follow = [f"{c.label} ({c.symptom or c.summary})" for c in self.consequences]
        if follow:
            text += "; then " + ", ".join(follow)
        return text

    def to_dict(self) -> dict[str, object] | None:
        """The REST form: the root cause and the consequences, or None."""
        if self.root is None:
            return None
        return {
            "replica": self.root.replica,
            "rank": self.root.rank,
            "summary": self.root.summary,
            "tail": list(self.root.tail),
            "consequences": [
                {"replica": c.replica, "rank": c.rank, "symptom": c.symptom or c.summary}
                for c in self.consequences
            ],
        }


def symptom(lines: Iterable[str]) -> str | None:
    """The peer-failure symptom in ``lines`` (its label), or None: a line that says the
    process lost a peer rather than failed on its own."""
    for text in lines:
        for label, pattern in _SECONDARY:
            if pattern.search(text):
                return label
    return None


def own_lines(replica: str, lines: Iterable[str]) -> list[str]:
    """``lines`` without jupyter-ddl's own notes about the replica (exits, restarts,
    stops) and without what followed a cancel."""
    out: list[str] = []
    for text in lines:
        if text.startswith(CANCEL_MARKER):
            break
        if text.startswith(f"{replica} ended with ") or text.startswith(f"{replica} stopped: "):
            continue
        out.append(text)
    return out


def status_tail(replica: str, lines: Sequence[str], ended_badly: bool) -> list[str]:
    """What a replica's status carries as its last lines: for one that failed or was
    stopped, the traceback that explains it (``diagnose`` reads it from there), else
    its last lines."""
    own = own_lines(replica, lines)
    if ended_badly and any(t.strip() == _TRACEBACK for t in own):
        tail, _ = _traceback(own, TAIL)
        if tail:
            return tail
    return own[-TAIL:]


def teardown_start(lines: Sequence[str]) -> int | None:
    """Index of the first line after the cancel marker, or None when there is none."""
    for i, text in enumerate(lines):
        if text.startswith(CANCEL_MARKER):
            return i + 1
    return None


#: launchers that wrap a child's failure in an exception of their own (torchrun's
#: summary names no exception): the child's own traceback, printed earlier, is the cause
_WRAPPERS = ("ChildFailedError",)


def _traceback(lines: Sequence[str], limit: int) -> tuple[list[str], str | None]:
    """(tail, exception line) of the last traceback in ``lines``. When that one is a
    launcher's wrapper (torchrun), the tracebacks its children printed since the wrapper
    before it stand in: the first that is not a peer's symptom, else the last."""
    starts = [i for i, t in enumerate(lines) if t.strip() == _TRACEBACK]
    found = [_block(lines, start, limit) for start in starts]
    if not found:
        kept = [t for t in lines if t.strip()]
        return kept[-limit:], _named_exception(kept)
    if len(starts) > 1 and symptom(found[-1][0]) == _STOPPED:
        # stopped from outside as the job failed (its restart killed by the job's end):
        # what the replica raised before, in an earlier run, is why
        earlier = _traceback(lines[: starts[-1]], limit)
        if earlier[1] is not None:
            return earlier
    if not _wrapper(found[-1][1]):
        return found[-1]
    children: list[tuple[list[str], str | None]] = []
    for item in reversed(found[:-1]):
        if _wrapper(item[1]):
            break  # an earlier attempt's summary
        children.insert(0, item)
    if not children:
        return found[-1]
    return next((c for c in children if symptom(c[0]) is None), children[-1])


def _wrapper(exc: str | None) -> bool:
    return exc is not None and any(w in exc for w in _WRAPPERS)


def _block(lines: Sequence[str], start: int, limit: int) -> tuple[list[str], str | None]:
    """The traceback that starts at ``start``: up to its exception line. That is the
    first line after the frames that is not indented, unless a line printed to stdout
    came between: a container runtime copies stdout and stderr separately (containerd,
    CRI-O: one copier each), so a line printed just before the raise may land among the
    frames. Then the first unindented line shaped like an exception is it: a named
    error first, else ``name.Path`` or ``name.Path: message``, else the first one."""
    nxt = next((i for i in range(start + 1, len(lines)) if lines[i].strip() == _TRACEBACK), None)
    flush = [
        i for i in range(start + 1, len(lines) if nxt is None else nxt)
        if lines[i].strip() and not lines[i][:1].isspace()
    ]  # fmt: skip
    if flush:
        end = 1 + next(
            (i for shape in (_EXCEPTION, _RAISED) for i in flush if shape.match(lines[i].strip())),
            flush[0],
        )
    else:  # cut short (its process killed): the last frame is all there is
        end = len(lines) if nxt is None else nxt
    exc = lines[end - 1].strip() if end > start + 1 else None
    return list(lines[start:end])[-limit:], exc


_EXCEPTION = re.compile(r"^[\w.]+(Error|Exception|Exit|Interrupt|Failure)\b")
#: an exception line of any class name: ``pkg.Name`` alone or ``pkg.Name: message``
_RAISED = re.compile(r"^[A-Za-z_][\w.]*(: .*)?$")


def _named_exception(lines: Sequence[str]) -> str | None:
    return next((t.strip() for t in reversed(lines) if _EXCEPTION.match(t.strip())), None)


def how_it_ended(r: ReplicaOutcome) -> str:
    """``exit code 137 (OOMKilled)``: the exit, and the backend's explanation of it
    ("" when nothing is known: an MPI rank ends with its launcher)."""
    if r.signal is not None:
        base = f"signal {r.signal}"
    elif r.exit_code is not None:
        base = f"exit code {r.exit_code}"
    else:
        base = ""
    if not r.message or r.message == base:
        return base
    return r.message if base and r.message.startswith(base) else f"{base} ({r.message})".strip()


def failure_of(r: ReplicaOutcome) -> Failure:
    tail, exc = _traceback(own_lines(r.id, r.lines), TAIL)
    how = how_it_ended(r)
    if exc:
        summary = f"{_short(exc)} ({how})" if how else _short(exc)
    else:
        summary = how or "failed"
    return Failure(r.id, r.label, r.rank, summary, tail, symptom(tail), exc, r.ended)


def _short(text: str, limit: int = 240) -> str:
    # long enough for the errors that put their cause last (torch's DistNetworkError ends
    # with "name: EADDRINUSE, message: address already in use")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def diagnose(replicas: Sequence[ReplicaOutcome]) -> Diagnosis:
    """The root cause of a failure and its consequences.

    Candidates are the failed replicas (and those waiting to restart after a failed
    run) and, once one failed, replicas the job's end stopped whose own output already
    shows an exception of their own (a torchrun whose child raised, stopped before it
    had exited itself). A failure that reads as a peer's failure seen from the other
    side (a ``symptom``) never leads while another candidate does not read so; among
    the rest, one that raised an exception of its own comes before one that only ended
    (an MPI rank that printed nothing wrong), then the first to fail. Every other
    failed replica is a consequence, in the order they failed, then each stopped one
    whose own lines show a peer's failure."""
    failed = [r for r in replicas if _failed(r)]
    if not failed:
        return Diagnosis(None)
    stopped = [failure_of(r) for r in replicas if r.state == "Terminated"]
    found = sorted(
        [failure_of(r) for r in failed] + [f for f in stopped if f.exception and not f.symptom],
        key=lambda f: (f.ended is None, f.ended or 0.0, _order(replicas, f.replica)),
    )
    root = min(found, key=lambda f: (f.symptom is not None, f.exception is None, found.index(f)))
    consequences = [f for f in found if f is not root and any(f.replica == r.id for r in failed)]
    # a peer that lost the root (its own lines say so) and was then stopped by the job's
    # end is a consequence too: the job's message named it while it was failing
    consequences += [f for f in stopped if f.symptom and f.replica != root.replica]
    return Diagnosis(root, consequences)


def _failed(r: ReplicaOutcome) -> bool:
    if r.state == "Failed":
        return True
    # waiting for its restart after a failed run
    return r.state == "Restarting" and (r.exit_code not in (None, 0) or r.signal is not None)


def _order(replicas: Sequence[ReplicaOutcome], rid: str) -> int:
    return next((r.order for r in replicas if r.id == rid), len(replicas))


def outcomes(replicas: Iterable[ReplicaStatus]) -> list[ReplicaOutcome]:
    """``ReplicaOutcome`` of each replica status (its ``last_lines``)."""
    return [
        ReplicaOutcome(
            id=rs.id,
            state=rs.state.value,
            rank=rs.rank,
            ended=rs.ended,
            lines=list(rs.last_lines),
            exit_code=rs.exit_code,
            signal=rs.signal,
            message=rs.message,
            order=i,
        )
        for i, rs in enumerate(replicas)
    ]
