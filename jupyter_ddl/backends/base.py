"""The one small abstract class every backend implements.

A backend owns where replicas run; it knows nothing of notebooks or widgets. The
manager (``jupyter_ddl.manager``) validates and ships, then calls these methods.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TypedDict

from typing_extensions import Unpack

from jupyter_ddl.config import Config, load_config
from jupyter_ddl.errors import DDLError, JobNotFound
from jupyter_ddl.models import (
    Capabilities,
    CodeBundle,
    JobEvent,
    JobHandle,
    JobSpec,
    JobStatus,
    LogLine,
)


class LogOptions(TypedDict, total=False):
    """What ``logs()`` takes besides the job's name, on every backend and the manager
    (the meaning and defaults are ``LogQuery``'s)."""

    replica: str | None
    offset: int
    tail: int | None
    follow: bool
    stop: threading.Event | None
    raw: bool


@dataclass(frozen=True)
class LogQuery:
    """Which log lines ``Backend.logs`` gives; see there."""

    replica: str | None = None  # one replica's id, or every replica
    offset: int = 0  # from this line of each replica
    tail: int | None = None  # only the last N lines of each replica
    follow: bool = False  # keep going until the job ends
    stop: threading.Event | None = None  # set: the iterator ends early
    raw: bool = False  # report() lines too


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
        """Every job this backend knows, newest first (on Kubernetes, every Kubeflow job
        of the namespace, whoever created it); with ``notebook``, only the jobs we
        submitted from that notebook."""

    @abstractmethod
    def watch(
        self, name: str, *, stop: threading.Event | None = None, from_start: bool = True
    ) -> Iterator[JobEvent]:
        """One event stream: status, replica state, log lines (never ``report()`` lines:
        those come as METRIC events), metrics, resources, waiting reasons. Ends after the job finished and every log line was delivered,
        or when ``stop`` is set. ``from_start`` replays the logs already written."""

    def logs(self, name: str, **options: Unpack[LogOptions]) -> Iterator[LogLine]:
        """Log lines of one replica (``worker-1``) or all, from line ``offset`` of each
        replica (or the last ``tail``); ``follow`` keeps going until the job ends.

        The lines a person reads: ``report()`` lines (``metrics.is_metric_line``) are
        left out, offsets skip them and ``tail`` does not count them; ``watch`` gives
        them as METRIC events. ``raw`` gives every line as written (the metrics'
        source). ``replica`` must be one of the job's replicas (JobNotFound naming them
        otherwise): it is looked up, never used as a file name or a filter that
        silently matches nothing."""
        query = LogQuery(**options)
        if query.replica is not None:
            known = list(self.replica_ids(name))
            if query.replica not in known:
                raise JobNotFound.replica(name, query.replica, known)
            # the job's own string from here on, never the caller's
            query = replace(query, replica=known[known.index(query.replica)])
        return self.read_logs(name, query)

    @abstractmethod
    def read_logs(self, name: str, query: LogQuery) -> Iterator[LogLine]:
        """``logs`` once the replica, if any, is known to be one of the job's."""

    def replica_ids(self, name: str) -> Sequence[str]:
        """The job's replica ids (``master-0``...): from its status and its spec."""
        ids = [r.id for r in self.get(name).replicas]
        try:
            spec = self.spec(name)
            more = [r.rid for r in spec.shape.replicas] if spec is not None else []
        except (DDLError, ValueError, KeyError, TypeError):
            more = []  # a spec this version cannot read: the status still names them
        return ids + [rid for rid in more if rid not in ids]

    def notebook_image(self) -> str | None:
        """The image of the notebook's own container, where this backend runs jobs in
        the cluster the notebook runs in (the image plan's first choice of base)."""
        return None

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
