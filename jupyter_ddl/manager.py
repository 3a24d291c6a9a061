"""The one job API every surface uses: magics, widgets, REST handlers, the sidebar.

``JobManager`` validates a spec, hands it and its code bundle to the chosen backend, and
forwards get/list/watch/logs/cancel/delete. No surface talks to a backend, the registry or
Kubernetes directly."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from typing_extensions import Unpack

from jupyter_ddl.backends import Backend, backend_class, backend_names
from jupyter_ddl.backends.base import LogOptions
from jupyter_ddl.config import Config, load_config
from jupyter_ddl.core.metrics import METRIC_MARKER, parse_metric_line
from jupyter_ddl.errors import (
    BackendNotConfigured,
    BackendUnavailable,
    DDLError,
    JobNotFound,
    RegistryError,
    SubmitAborted,
)
from jupyter_ddl.i18n import tr
from jupyter_ddl.models import CodeBundle, JobEvent, JobHandle, JobSpec, JobStatus, LogLine
from jupyter_ddl.validation import validate

if TYPE_CHECKING:
    from jupyter_ddl.image import BuiltImage
    from jupyter_ddl.image.plan import ImagePlan

log = logging.getLogger(__name__)

#: (replica, values) for each ``report(**metrics)`` line, in log order
Reports = list[tuple[str, dict[str, float]]]

#: seconds an unavailable backend is left out of lists and searches
UNAVAILABLE_RETRY_S = 30.0
#: the backend whose replicas run the images a dry run and ``build_image`` plan; it
#: reads the notebook pod the plan's base may come from
IMAGE_BACKEND = "kubernetes"


@dataclass(frozen=True)
class Unavailable:
    """A backend left out of a list or a search, and why (one line each)."""

    backend: str
    error: str  # the error class, e.g. "ClusterUnreachable"
    message: str  # the cause, starting with the backend's name
    hint: str | None = None

    @classmethod
    def of(cls, backend: str, error: BaseException) -> Unavailable:
        """The entry for ``backend`` left out because of ``error`` (one line, hint apart)."""
        if isinstance(error, DDLError):
            message, hint = error.message, error.hint
        else:  # a bug in a backend: still only that backend is left out
            message = f"failed unexpectedly ({type(error).__name__}: {error})"
            hint = "a bug: the server log has the traceback"
        message = message.strip().splitlines()[0] if message.strip() else type(error).__name__
        if not message.startswith(f"{backend}:"):
            message = f"{backend}: {message}"
        return cls(backend, type(error).__name__, message, hint)

    @property
    def line(self) -> str:
        """The message, with its hint in parentheses when there is one."""
        return f"{self.message} ({self.hint})" if self.hint else self.message

    def to_dict(self) -> dict[str, str | None]:
        """The entry as JSON-ready data (what the REST API lists)."""
        return {"backend": self.backend, "error": self.error, "message": self.line}


@dataclass(frozen=True)
class JobResults:
    """What a job has produced so far, read in one call (``JobManager.results``): its
    state, its one-line message (a failure's root cause first) and every ``report()``."""

    name: str
    state: str  # the JobState's value: "Succeeded", "Failed", "Running"...
    message: str | None
    reports: Reports  # (replica, values) for each report() line, in log order

    @property
    def latest(self) -> dict[str, dict[str, float]]:
        """Per replica (in the order they first reported), the latest value of each key
        it reported: a replica that reported ``loss`` often and ``checksum`` once at the
        end has both."""
        out: dict[str, dict[str, float]] = {}
        for replica, values in self.reports:
            out.setdefault(replica, {}).update(values)
        return out

    def values(self, key: str, replica: str | None = None) -> list[float]:
        """Every reported value of ``key`` (only ``replica``'s when given), in log order."""
        return [
            values[key]
            for rid, values in self.reports
            if key in values and (replica is None or rid == replica)
        ]


@dataclass
class JobList:
    """The jobs every available backend has, and the backends that could not be asked."""

    jobs: list[JobStatus] = field(default_factory=list)
    unavailable: list[Unavailable] = field(default_factory=list)


class JobManager:
    """The job API: validate, submit, find, watch, read and end jobs on any backend."""

    def __init__(
        self, config: Config | None = None, backends: dict[str, Backend] | None = None
    ) -> None:
        self.config = config or load_config()
        self._backends: dict[str, Backend] = dict(backends or {})
        self._lock = threading.Lock()
        # backend name -> (when, why) it was last unavailable: an unreachable cluster
        # is skipped for a while so every sidebar poll and `%ddl list` stays fast, and
        # the reason is still reported each time.
        self._down: dict[str, tuple[float, Unavailable]] = {}

    # -- backends -------------------------------------------------------------
    def backend(self, name: str | None = None) -> Backend:
        """The backend ``name`` (the config's default when None), created on first use."""
        name = name or self.config.backend
        with self._lock:
            if name not in self._backends:
                self._backends[name] = backend_class(name)(config=self.config)
            return self._backends[name]

    def backend_names(self) -> list[str]:
        """The names of the installed backends, ``local`` first."""
        return backend_names()

    def _mark_down(self, name: str, error: BaseException) -> Unavailable:
        if not isinstance(error, DDLError):
            log.warning("jupyter-ddl: backend %s failed", name, exc_info=error)
        why = Unavailable.of(name, error)
        if isinstance(error, BackendUnavailable):
            self._down[name] = (time.monotonic(), why)
        return why

    def _recently_down(self, name: str) -> Unavailable | None:
        when, why = self._down.get(name, (-1e9, None))
        return why if time.monotonic() - when < UNAVAILABLE_RETRY_S else None

    def _usable(self, names: list[str], skipped: list[Unavailable]) -> Iterator[Backend]:
        """The backends of ``names`` that load and were not unavailable in the last
        UNAVAILABLE_RETRY_S; the others are added to ``skipped`` with their reason."""
        for name in names:
            why = self._recently_down(name)
            if why is None:
                try:
                    backend = self.backend(name)
                except Exception as e:  # noqa: BLE001 - not installed / not configured / a bug
                    why = self._mark_down(name, e)
                else:
                    yield backend
                    continue
            self._skip(why, skipped)

    def _skip(self, why: Unavailable, skipped: list[Unavailable]) -> None:
        """Adds ``why`` to ``skipped`` unless its backend was never set up here and is not
        the user's choice: it holds no job of theirs; naming it would alarm a local-only user."""
        if why.error != BackendNotConfigured.__name__ or why.backend == self.config.backend:
            skipped.append(why)

    # -- jobs -----------------------------------------------------------------
    def submit(self, spec: JobSpec, bundle: CodeBundle) -> JobHandle:
        """Validate, then start the job on ``spec.backend``. Raises ValidationError
        (every problem listed), JobConflict, ResourceError, BackendUnavailable."""
        validate(spec)
        backend = self.backend(spec.backend)
        began = time.time()
        try:
            return backend.submit(spec, bundle)
        except KeyboardInterrupt:
            # A Ctrl-C the backend did not answer itself (with SubmitAborted) came before
            # it wrote anything or once the job had started: the job's presence says which.
            raise _interrupted(backend, spec.name, began) from None

    def dry_run(self, spec: JobSpec, bundle: CodeBundle | None = None) -> str:
        """The Kubeflow objects the job would create, as YAML documents."""
        from jupyter_ddl.manifests.dryrun import render_yaml  # here: yaml and requests

        validate(spec)
        return render_yaml(spec, bundle, config=self.config, image=self._image_plan(spec, bundle))

    def build_image(
        self,
        spec: JobSpec,
        bundle: CodeBundle,
        progress: Callable[[int, int], None] | None = None,
    ) -> BuiltImage:
        """Build the job's image (the bundle appended to a base) and push it: the image
        a later submit of the same cell uses (``image.plan``), so that submit uploads
        nothing. ``progress(done, total)`` reports big uploads. Raises RegistryError
        (no registry configured, or what the registry answered) and ValidationError
        (bad reference)."""
        from jupyter_ddl.image import build_and_push  # here: requests, as the plan

        plan = self._image_plan(spec, bundle)
        if plan.repository is None:
            raise RegistryError(
                tr("no image registry is configured, so the code cannot travel as an image"),
                hint=tr(
                    "run `%ddl config registry=<host>/<namespace>`, "
                    "or leave it unset to ship a ConfigMap"
                ),
            )
        return build_and_push(
            bundle, base=plan.base, target_repo=plan.repository, config=self.config,
            progress=progress,
        )  # fmt: skip

    def _image_plan(self, spec: JobSpec, bundle: CodeBundle | None) -> ImagePlan:
        # here: the image layer brings requests, which a local job never needs
        from jupyter_ddl.image.plan import plan_image

        return plan_image(spec, bundle, self.config, self._notebook_image())

    def _notebook_image(self) -> str | None:
        """The notebook pod's own image, as the backend that runs the images reads it;
        None outside a notebook pod or where it cannot be read."""
        for b in self._usable([IMAGE_BACKEND], []):
            try:
                return b.notebook_image()
            except Exception as e:  # noqa: BLE001 - any failure here only means "use the default"
                log.info(
                    "cannot read this notebook's pod (%s); using the default base", type(e).__name__
                )
        return None

    def find(self, name: str, backend: str | None = None) -> Backend:
        """The backend that knows job ``name``; raises JobNotFound (naming the backends
        that could not be asked)."""
        if backend:
            return self.backend(backend)
        default = self.config.backend
        # The default backend first: it usually knows the job, and loading the others
        # (the kubernetes client) costs a second in every `%ddl` command.
        names = [default] + [n for n in backend_names() if n != default]
        skipped: list[Unavailable] = []
        asked: list[str] = []
        for b in self._usable(names, skipped):
            try:
                b.get(name)
                return b
            except JobNotFound:
                asked.append(b.name)
            except Exception as e:  # noqa: BLE001 - one backend failing must not hide the others
                self._skip(self._mark_down(b.name, e), skipped)
        also = "".join(f"; {u.message}" for u in skipped)
        said = tr("no job named {name!r}", name=name)
        if asked:
            said = tr("no job named {name!r} in {backends}", name=name, backends=", ".join(asked))
        raise JobNotFound(said + also, hint=tr("`%ddl list` shows the jobs"))

    def get(self, name: str, backend: str | None = None) -> JobStatus:
        """The status of the job ``name`` on whichever backend holds it."""
        return self.find(name, backend).get(name)

    def listing(self, *, backend: str | None = None, notebook: str | None = None) -> JobList:
        """Jobs of every backend (newest first) and the backends that could not be
        asked, each with a one-line reason. With ``backend`` only that one, and its
        errors raise."""
        if backend:
            jobs = self.backend(backend).list(notebook=notebook)
            return JobList(sorted(jobs, key=lambda j: j.created or 0, reverse=True))
        out = JobList()
        for b in self._usable(backend_names(), out.unavailable):
            try:
                out.jobs.extend(b.list(notebook=notebook))
            except Exception as e:  # noqa: BLE001 - one backend failing must not hide the others
                self._skip(self._mark_down(b.name, e), out.unavailable)
        out.jobs.sort(key=lambda j: j.created or 0, reverse=True)
        return out

    def list(self, *, backend: str | None = None, notebook: str | None = None) -> list[JobStatus]:
        """``listing(...).jobs``: the jobs of every available backend, newest first."""
        return self.listing(backend=backend, notebook=notebook).jobs

    def watch(
        self,
        name: str,
        *,
        backend: str | None = None,
        stop: threading.Event | None = None,
        from_start: bool = True,
    ) -> Iterator[JobEvent]:
        """The job's events (status, replicas, logs, metrics) until it finished or ``stop``."""
        return self.find(name, backend).watch(name, stop=stop, from_start=from_start)

    def logs(
        self, name: str, *, backend: str | None = None, **options: Unpack[LogOptions]
    ) -> Iterator[LogLine]:
        """``Backend.logs`` of the backend that holds the job."""
        return self.find(name, backend).logs(name, **options)

    def replica_ids(self, name: str, backend: str | None = None) -> Sequence[str]:
        """The job's replica ids (``master-0``...)."""
        return self.find(name, backend).replica_ids(name)

    def reports(self, name: str, backend: str | None = None) -> Reports:
        """Every ``report(**metrics)`` the job's replicas printed, as (replica, values) in
        log order (the step, when given, is left out of the values)."""
        out: Reports = []
        for line in self.logs(name, backend=backend, raw=True):
            if METRIC_MARKER in line.text:
                metric = parse_metric_line(line.text)
                if metric is not None:
                    out.append((line.replica, metric.values))
        return out

    def results(self, name: str, backend: str | None = None) -> JobResults:
        """The job's state and message with its ``reports``. The state is read first, so
        for a finished job the reports are complete."""
        found = self.find(name, backend)
        status = found.get(name)
        return JobResults(name, status.state.value, status.message, self.reports(name, found.name))

    def cancel(self, name: str, backend: str | None = None) -> JobStatus:
        """Stop the job's replicas; returns its status (cancelling twice is harmless)."""
        return self.find(name, backend).cancel(name)

    def delete(self, name: str, backend: str | None = None) -> None:
        """Cancel the job if it runs, then forget it and its data."""
        self.find(name, backend).delete(name)

    def spec(self, name: str, backend: str | None = None) -> JobSpec | None:
        """The spec the job was submitted with, when its backend kept it."""
        return self.find(name, backend).spec(name)

    def wait(
        self, name: str, *, backend: str | None = None, timeout: float | None = None
    ) -> JobStatus:
        """Block until the job finished (or ``timeout`` seconds passed); returns its status."""
        b = self.find(name, backend)
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.1
        while True:
            status = b.get(name)
            if status.state.finished:
                return status
            if deadline is not None and time.monotonic() >= deadline:
                return status
            time.sleep(delay)
            delay = min(delay * 1.5, 1.0)

    def close(self) -> None:
        """Close every backend this manager opened (watchers, connections)."""
        for b in self._backends.values():
            b.close()


_default: JobManager | None = None


def default_manager() -> JobManager:
    """The process-wide manager the magics and the server extension share."""
    global _default
    if _default is None:
        _default = JobManager()
    return _default


def _interrupted(backend: Backend, name: str, began: float) -> SubmitAborted:
    """The one line for a submit a Ctrl-C cut outside the backend's own guard."""
    try:
        status: JobStatus | None = backend.get(name)
    except DDLError:
        status = None
    # a job of that name made before this submit began is another one (a clock a little
    # apart, as a cluster's may be, still counts as this one)
    if status is not None and (status.created is None or status.created >= began - 60):
        return SubmitAborted(
            tr(
                "{name} was submitted before the interrupt and runs; `%ddl cancel {name}` stops it",
                name=name,
            )
        )
    return SubmitAborted(
        tr(
            "{name} was not submitted: the submit was interrupted before it began; "
            "the cell can run again",
            name=name,
        )
    )
