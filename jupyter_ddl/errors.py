"""One small error hierarchy.

Every error a user can meet carries a one-line message that names the cause and the
next step. Surfaces (magics, REST handlers) show ``str(error)`` and never a traceback
for these; anything else is a bug and is shown as one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jupyter_ddl.i18n import tr


class DDLError(Exception):
    """Base of every error this package raises on purpose."""

    #: what the REST layer answers with
    http_status = 500

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(f"{message} ({hint})" if hint else message)


class ValidationError(DDLError):
    """A job description breaks a rule; ``problems`` lists every one of them."""

    http_status = 400

    def __init__(self, problems: list[str] | str) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("; ".join(self.problems))


class CaptureError(DDLError):
    """The cell cannot be shipped as it is (syntax error, a refused magic...)."""

    http_status = 400


class JobNotFound(DDLError):
    """No job (or replica) of that name: the message names what there is."""

    http_status = 404

    @classmethod
    def replica(cls, job: str, replica: str, known: Sequence[str]) -> JobNotFound:
        """A replica name that is not one of the job's: every surface answers this."""
        shown = replica if len(replica) <= 60 else replica[:60] + "…"
        return cls(
            tr(
                "job {job!r} has no replica {replica!r}; its replicas: {known}",
                job=job, replica=shown, known=", ".join(known) or tr("none"),
            ),
            hint=tr("`%ddl status {job}` lists them", job=job),
        )  # fmt: skip


class JobConflict(DDLError):
    """A job of that name exists already."""

    http_status = 409


class BackendUnavailable(DDLError):
    """The backend cannot be reached or is not installed/configured."""

    http_status = 503


class UnknownBackend(BackendUnavailable):
    """No backend has this name: the caller's mistake (a 400 in REST), still caught
    wherever a backend that cannot be used is."""

    http_status = 400


class BackendNotConfigured(BackendUnavailable):
    """The backend was never set up here (Kubernetes: no KUBECONFIG, no ~/.kube/config,
    not in a cluster pod): a local-only user's normal case, not a fault to report in
    every job list."""


class ClusterUnreachable(BackendUnavailable):
    """The cluster's API did not answer: connection refused, timeout, TLS or proxy
    failure, unknown host."""


class ClusterUnauthorized(BackendUnavailable):
    """The cluster refused the credentials (401): an expired exec/OIDC token, a
    revoked service-account token. Still 503 to our clients: answering 401 would tell
    JupyterLab that the *notebook* session needs a new login."""


class ResourceError(DDLError):
    """The job asks for more than is there (GPUs, quota)."""

    http_status = 422


class PermissionDenied(DDLError):
    """The cluster refused an action (RBAC): the message names the verb and resource."""

    http_status = 403


class RegistryError(DDLError):
    """Talking to an image registry failed."""

    http_status = 502


class TransientRegistryError(RegistryError):
    """A registry failure worth retrying as a whole (dropped connection, 5xx)."""


class ClusterError(DDLError):
    """The Kubernetes API answered with an error we could not map to a better class."""

    http_status = 502


class SubmitAborted(DDLError):
    """A submit stopped part-way (interrupted, or the disk refused a file): nothing of
    the job was left behind, so the same name can be submitted again."""

    http_status = 503


class JobFailed(DDLError):
    """A job followed with ``--wait`` / ``%ddl wait`` ended Failed: the job is in a
    state the request did not want."""

    http_status = 409

    @classmethod
    def of(cls, name: str, message: str | None, root: Any = None) -> JobFailed:
        """``job X failed: <root cause first>; `%ddl logs X --replica R` shows its
        lines`` (``root``: the diagnosis' root-cause replica, when known)."""
        where = f" --replica {root.replica}" if root is not None else ""
        return cls(
            tr(
                "job {name} failed: {cause}; `%ddl logs {name}{where}` shows every line",
                name=name, cause=message or tr("a replica failed"), where=where,
            )
        )  # fmt: skip


class ShownError(Exception):
    """A DDLError as a notebook cell shows it: one line, no traceback (IPython calls
    ``_render_traceback_``), and still an error, so "Run all" stops there."""

    def __init__(self, error: DDLError) -> None:
        self.error = error
        super().__init__(str(error))

    @property
    def http_status(self) -> int:
        """The HTTP status of the error shown."""
        return self.error.http_status

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31m{type(self.error).__name__}\x1b[0m: {self.error}"]


# -- internal: raised and caught inside the package, never shown to a user as they are --


class WatchError(RuntimeError):
    """An ERROR event of a Kubernetes watch other than 410 Gone (the API said what went
    wrong); the watch producer reports it and lists again."""

    http_status = 502


class BodyError(ValueError):
    """Bytes that are not a valid chunked HTTP body (a broken or foreign log stream); the
    log multiplexer opens the stream again."""

    http_status = 502


class GpuCheckFailed(Exception):
    """One step of ``python -m jupyter_ddl.diagnostics.gpucheck`` found the GPU path wrong; the check
    prints it as a failed row."""

    http_status = 500
