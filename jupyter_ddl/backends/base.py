"""The one small abstract class every backend implements.

A backend owns where replicas run; it knows nothing of notebooks or widgets. The
manager (``jupyter_ddl.manager``) validates and ships, then calls these methods.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator

from ..config import Config, load_config
from ..models import Capabilities, CodeBundle, JobEvent, JobHandle, JobSpec, JobStatus, LogLine


class Backend(ABC):
    #: registry name ("local", "kubernetes")
    name: str = ""

    def __init__(self, config: Config | None = None) -> None:
        self.config = config or load_config()

    @abstractmethod
    def submit(self, spec: JobSpec, bundle: CodeBundle) -> JobHandle:
        """Start the job. Raises JobConflict if the name is taken, ResourceError if the
        job asks for more than the backend has, BackendUnavailable if unreachable."""

    @abstractmethod
    def get(self, name: str) -> JobStatus:
        """Current status; raises JobNotFound."""

    @abstractmethod
    def list(self, *, notebook: str | None = None) -> list[JobStatus]:
        """Every job of ours this backend knows, newest first."""

    @abstractmethod
    def watch(
        self, name: str, *, stop: threading.Event | None = None, from_start: bool = True
    ) -> Iterator[JobEvent]:
        """One event stream: status, replica state, log lines (never ``report()`` lines:
        those come as METRIC events), metrics, resources, waiting reasons. Ends after the job finished and every log line was delivered,
        or when ``stop`` is set. ``from_start`` replays the logs already written."""

    @abstractmethod
    def logs(
        self,
        name: str,
        *,
        replica: str | None = None,
        offset: int = 0,
        tail: int | None = None,
        follow: bool = False,
        stop: threading.Event | None = None,
        raw: bool = False,
    ) -> Iterator[LogLine]:
        """Log lines of one replica (``worker-1``) or all, from line ``offset`` of each
        replica (or the last ``tail``); ``follow`` keeps going until the job ends.

        The lines a person reads: ``report()`` lines (``metrics.is_metric_line``) are
        left out, offsets skip them and ``tail`` does not count them; ``watch`` gives
        them as METRIC events. ``raw`` gives every line as written (the metrics'
        source)."""

    @abstractmethod
    def cancel(self, name: str) -> JobStatus:
        """Stop every replica; the job ends Cancelled. Idempotent."""

    @abstractmethod
    def delete(self, name: str) -> None:
        """Cancel if running, then forget the job and its data."""

    @abstractmethod
    def capabilities(self) -> Capabilities: ...

    def spec(self, name: str) -> JobSpec | None:
        """The spec the job was submitted with, where the backend kept it."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release connections and threads."""
