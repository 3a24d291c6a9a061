"""What a job watcher's producer threads hand its consumer, one small class each
(``watch.JobWatcher`` has one handler per class)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from jupyter_ddl.errors import DDLError

Batch = list[tuple[float | None, str]]  # (time, text) of log lines, in order


@dataclass(frozen=True)
class Changed:
    """An object added, modified or deleted (``etype``), as the API sent it."""

    about: ClassVar[str] = "objects"
    etype: str
    obj: dict[str, Any]


@dataclass(frozen=True)
class JobChanged(Changed):
    about: ClassVar[str] = "the job"


@dataclass(frozen=True)
class PodChanged(Changed):
    about: ClassVar[str] = "its pods"


@dataclass(frozen=True)
class EventSeen(Changed):
    about: ClassVar[str] = "events"


@dataclass(frozen=True)
class Synced:
    """A (re-)list of ``of`` ended: ``names`` is all there is, the rest was deleted."""

    of: type[Changed]
    names: frozenset[str]


@dataclass(frozen=True)
class Refused:
    """The API refused watching ``of`` (403, 404): that producer ended."""

    of: type[Changed]
    error: Exception


@dataclass(frozen=True)
class LostContact:
    """A producer failed and retries after a back-off: ``cause`` in one line."""

    cause: str

    @property
    def message(self) -> str:
        return f"lost contact with the API: {self.cause}; retrying"


@dataclass(frozen=True)
class Lines:
    rid: str
    batch: Batch


@dataclass(frozen=True)
class LogFailed:
    rid: str
    error: DDLError


@dataclass(frozen=True)
class FollowerDone:
    """A follower (a ``logstream.Stream``) ended; its lines were queued before this."""

    stream: Any


@dataclass(frozen=True)
class Usage:
    pod: str
    values: dict[str, float]


@dataclass(frozen=True)
class Tick:
    """Nothing arrived for a while (made by the consumer)."""


Item = Changed | Synced | Refused | LostContact | Lines | LogFailed | FollowerDone | Usage | Tick
#: items that change no status: folding it again for each would cost a pass over every pod
QUIET = (Lines, Usage, FollowerDone)


def one_line(e: BaseException) -> str:
    """``KeyError: 'resourceVersion'``: an exception as a cause in one line."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__
