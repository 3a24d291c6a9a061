"""LocalBackend: replicas as processes on this machine, one supervisor per job.

Everything lives in the job directory (see ``jobdir``), so any LocalBackend instance
(a restarted kernel, the server extension) lists, watches and cancels every job.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from jupyter_ddl._util import diskfull
from jupyter_ddl._util.interrupts import held_interrupt
from jupyter_ddl.backends.base import Backend, LogQuery
from jupyter_ddl.backends.local import control, gpus, ownership, warm
from jupyter_ddl.backends.local.events import watch_job
from jupyter_ddl.backends.local.jobdir import DIR_MODE, JobDir, jobs_root
from jupyter_ddl.backends.local.launch import job_environ
from jupyter_ddl.backends.local.logs import iter_logs
from jupyter_ddl.backends.local.usage import UsageSampler
from jupyter_ddl.config import Config, data_dir
from jupyter_ddl.core.bundle import CELL
from jupyter_ddl.core.strategies import CATALOG
from jupyter_ddl.errors import (
    BackendUnavailable,
    DDLError,
    JobConflict,
    JobNotFound,
    ResourceError,
    SubmitAborted,
    ValidationError,
)
from jupyter_ddl.i18n import tr
from jupyter_ddl.models import (
    Capabilities,
    CodeBundle,
    JobEvent,
    JobHandle,
    JobSpec,
    JobState,
    JobStatus,
    LogLine,
    ReplicaStatus,
)

_READ_ERRORS = (OSError, ValueError, KeyError, TypeError)


class LocalBackend(Backend):
    name = "local"

    def __init__(self, config: Config | None = None, *, root: Path | None = None) -> None:
        super().__init__(config)
        self.root = root or jobs_root(data_dir())
        self._spawned: list[subprocess.Popen[bytes]] = []
        self._verified: dict[Path, tuple[int, int]] = {}  # job file -> (mtime, size) read fine
        self._usage = UsageSampler()  # what `get` reports beside each replica

    # -- paths -------------------------------------------------------------------------
    def _jobdir(self, name: str) -> JobDir:
        if not _plain_name(name) or not (jd := JobDir(self.root / name)).exists():
            raise JobNotFound(
                tr("no local job named {name!r}", name=name), hint=tr("`%ddl list` shows the jobs")
            )
        return jd

    # -- submit ------------------------------------------------------------------------
    def submit(self, spec: JobSpec, bundle: CodeBundle) -> JobHandle:
        """Write the job directory and start its supervisor. Raises JobConflict when the
        name is taken, ResourceError when the job wants more GPUs or processes than
        this machine allows."""
        if not _plain_name(spec.name) or spec.name != spec.name.strip():
            said = tr(
                "{name!r} is not a job name; use lowercase letters, digits and '-'", name=spec.name
            )
            raise ValidationError(f"name: {said}")
        if spec.gang is not None:  # silently dropped, it would promise what never happens
            raise ValidationError(
                "--gang/--queue/--priority: "
                + tr(
                    "the local backend starts every replica at once and has no scheduler "
                    "queue; drop them, or submit with -b kubernetes"
                )
            )
        control.check_process_limit(spec, self.config.local_max_processes)
        self._check_resources(spec)
        jd = JobDir(self.root / spec.name)
        handle = JobHandle(
            name=spec.name, backend=self.name, notebook=spec.notebook or bundle.source_notebook,
            code_digest=bundle.digest, cell_id=spec.cell_id,
        )  # fmt: skip
        settings = {
            "env_passthrough": list(self.config.local_env_passthrough),
            "stall_seconds": self.config.stall_seconds,
            "teardown_timeout": self.config.teardown_timeout,
        }
        python = self.config.python or sys.executable
        try:
            jd.root.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            jd.root.mkdir(mode=DIR_MODE)
        except FileExistsError:
            raise JobConflict(
                tr("a local job named {name!r} exists already", name=spec.name),
                hint=tr("pick another name, or `%ddl delete {name}` first", name=spec.name),
            ) from None
        except OSError as e:
            raise _aborted(spec.name, e, jd.root) from None
        try:  # from here the directory is ours: complete, or removed again
            jd.create(spec, bundle, handle, cwd=os.getcwd(), python=python, settings=settings)
        except (KeyboardInterrupt, OSError) as e:
            _discard(jd.root)
            raise _aborted(spec.name, e, jd.root) from None
        try:
            if self._start(spec, jd, python, bundle):
                self._start_spare(warm.module_of(spec), jd)  # for the next job like it
        except KeyboardInterrupt as e:
            if jd.supervisor() is not None:  # it runs: the submit is done
                raise SubmitAborted(
                    tr(
                        "{name} was submitted before the interrupt and runs; "
                        "`%ddl cancel {name}` stops it",
                        name=spec.name,
                    )  # fmt: skip
                ) from None
            # no supervisor yet: nothing may stay behind, a process it started included
            # (one a spare forked for it, its answer not yet read, works in its directory)
            control.stop_leftovers(jd)
            ownership.stop(ownership.working_in(jd.root), grace=1.0)
            _discard(jd.root)
            raise _aborted(spec.name, e, jd.root) from None
        return handle

    def _start(self, spec: JobSpec, jd: JobDir, python: str, bundle: CodeBundle) -> bool:
        """Give the job a supervisor, a warm spare's or a cold one; whether jobs like it
        can start warm (a spare of its framework is then started for the next one)."""
        # the job's share of the kernel's environment: all that reaches its processes
        environ = job_environ(os.environ, self.config.local_env_passthrough, spec.secret_env)
        cell = bundle.files.get(CELL, b"").decode(errors="replace")
        if self.config.local_warm_seconds <= 0 or not warm.has_warm_path(spec, cell):
            self._cold(jd, environ, None)
            return False
        cold = warm.cold_reason(spec, bundle.requirements, python)
        if cold is not None:  # this job never starts warm: no spare for it either
            self._cold(jd, environ, cold)
            return False
        got = warm.hand_over(self._warm_dir, jd, environ, warm.module_of(spec))
        if isinstance(got, str):
            self._cold(jd, environ, got)
        else:
            with held_interrupt():  # a supervisor whose record is lost runs unseen
                control.record_supervisor(jd, *got)
        return True

    def _cold(self, jd: JobDir, environ: dict[str, str], why: str | None) -> None:
        # From the fork to the record (and the Popen kept for _reap), a Ctrl-C would
        # leave a supervisor nobody knows of: it is held until both are done.
        with held_interrupt():
            self._spawned.append(control.start_supervisor(jd, environ, why))

    @property
    def _warm_dir(self) -> Path:
        return warm.warm_dir(self.root.parent)

    def _start_spare(self, module: str, beside: JobDir) -> None:
        c = self.config
        args = (c.local_warm_seconds, os.environ, c.local_env_passthrough, module, beside)
        proc = warm.start_spare(self._warm_dir, *args)
        if proc is not None:
            self._spawned.append(proc)  # reaped in _reap() once it exits

    def _check_resources(self, spec: JobSpec) -> None:
        asked = spec.shape.gpu_requests()
        if any(n for _, n in asked):
            gpus.assign_gpus(asked, gpus.detect_gpus())  # raises ResourceError

    def _reap(self) -> None:
        self._spawned = [p for p in self._spawned if p.poll() is None]

    # -- status ------------------------------------------------------------------------
    def get(self, name: str) -> JobStatus:
        """The status, and what each running replica uses now (CPU, memory, GPU)."""
        status = self._status(self._jobdir(name))
        if not status.state.finished:
            used = self._usage.sample(status.replicas)
            for r in status.replicas:
                r.resources = used.get(r.id, {})
        return status

    def _status(self, jd: JobDir) -> JobStatus:
        """The job's status; a job whose supervisor died without a last word ends here,
        Failed, once, and whatever it left running is stopped."""
        self._reap()
        try:
            self._check_files(jd)
            status = jd.status() or self._initial_status(jd)
        except _READ_ERRORS:
            self._check_not_deleted(jd)
            return control.unreadable_status(jd, control.supervisor_alive(jd))
        if status.state.finished or control.supervisor_alive(jd):
            return status
        try:
            status = jd.status() or status  # it may have finished between the two reads
        except _READ_ERRORS:
            self._check_not_deleted(jd)
            return control.unreadable_status(jd, alive=False)
        if status.state.finished:
            return status
        control.stop_leftovers(jd)
        why = (
            diskfull.message(jd.root) if diskfull.nearly_full(jd.root) else "unexpectedly (killed?)"
        )
        status = control.end_without_supervisor(
            status,
            JobState.FAILED,
            f"the supervisor of {jd.name} stopped {why} and its processes "
            f"were stopped; see {jd.supervisor_log}",
        )
        try:
            jd.write_status(status)
        except OSError:
            pass  # not ours to write (another user's data dir): the answer still stands
        return status

    @staticmethod
    def _check_not_deleted(jd: JobDir) -> None:
        """A job whose directory went away while someone read it (``%ddl delete``
        from another kernel, the sidebar) was deleted, not broken: say so."""
        if not jd.root.exists():
            raise JobNotFound(
                tr(
                    "local job {name!r} was deleted (by another kernel, the sidebar or REST) "
                    "while it was followed",
                    name=jd.name,
                ),
                hint=tr("`%ddl list` shows the jobs left"),
            )

    def _check_files(self, jd: JobDir) -> None:
        """Raise when spec.json or handle.json is not what we wrote (each is parsed
        again only when it changed, so a watch's frequent reads stay cheap)."""
        for path, read in ((jd.spec_path, jd.spec), (jd.handle_path, jd.handle)):
            st = path.stat()
            if self._verified.get(path) != (st.st_mtime_ns, st.st_size):
                read()
                self._verified[path] = (st.st_mtime_ns, st.st_size)

    def _initial_status(self, jd: JobDir) -> JobStatus:
        spec, handle = jd.spec(), jd.handle()
        return JobStatus(
            name=spec.name, backend=self.name, strategy=spec.strategy, state=JobState.PENDING,
            replicas=[ReplicaStatus(r.role, r.index, rank=r.rank) for r in spec.shape.replicas],
            created=handle.created, notebook=handle.notebook, code_digest=handle.code_digest,
            cell_id=handle.cell_id, backoff_limit=spec.effective_backoff_limit,
        )  # fmt: skip

    def list(self, *, notebook: str | None = None) -> list[JobStatus]:
        if not self.root.exists():
            return []  # nothing submitted yet
        try:
            paths = list(self.root.iterdir())
        except OSError as e:  # an unreadable store hides every job: say so, never "no jobs"
            reason = e.strerror or type(e).__name__
            raise BackendUnavailable(
                "local: "
                + tr("the job directory {path} cannot be read ({why})", path=self.root, why=reason),
                hint=tr("make it a readable directory, or point JUPYTER_DDL_DATA_DIR elsewhere"),
            ) from e
        out = []
        for path in paths:
            jd = JobDir(path)
            try:
                if not jd.exists():
                    continue  # not a job, or one being deleted right now
                status = self._status(jd)
            except OSError:
                continue
            except Exception:  # noqa: BLE001 - one job's bad state never hides the others
                status = control.unreadable_status(jd, alive=False)
            if notebook is None or status.notebook == notebook:
                out.append(status)
        return sorted(out, key=lambda s: s.created or 0, reverse=True)

    def spec(self, name: str) -> JobSpec | None:
        try:
            return self._jobdir(name).spec()
        except _READ_ERRORS:
            return None  # `get` says which file is unreadable

    def job_dir(self, name: str) -> Path:
        """Where the job's files are (for `%ddl` and support)."""
        return self._jobdir(name).root

    def replica_ids(self, name: str) -> Sequence[str]:
        """The job's replicas (``master-0``...), from its spec; from its log files when
        the spec is unreadable."""
        jd = self._jobdir(name)
        try:
            return [r.rid for r in jd.spec().shape.replicas]
        except _READ_ERRORS:
            return list(jd.log_files())

    # -- streams -----------------------------------------------------------------------
    def read_logs(self, name: str, query: LogQuery) -> Iterator[LogLine]:
        jd = self._jobdir(name)
        q = query
        return iter_logs(
            jd, replica=q.replica, offset=q.offset, tail=q.tail, follow=q.follow, stop=q.stop,
            finished=lambda: self._status(jd).state.finished, raw=q.raw,
        )  # fmt: skip

    def watch(
        self, name: str, *, stop: threading.Event | None = None, from_start: bool = True
    ) -> Iterator[JobEvent]:
        jd = self._jobdir(name)
        return watch_job(self._status, jd, stop or threading.Event(), from_start)

    # -- control -----------------------------------------------------------------------
    def cancel(self, name: str) -> JobStatus:
        """Stop every process of the job (through its supervisor, or here when it is
        gone); the job ends Cancelled, its logs stay."""
        jd = self._jobdir(name)
        status = self._status(jd)
        if status.state.finished:
            return status
        control.stop_supervisor(jd)
        control.stop_leftovers(jd)  # what a killed or unanswering supervisor left
        try:
            status = jd.status() or self._initial_status(jd)
        except _READ_ERRORS:
            status = control.unreadable_status(jd, alive=False)
        if not status.state.finished:
            control.end_without_supervisor(status, JobState.CANCELLED, "cancelled by the user")
            jd.write_status(status)
        return status

    def delete(self, name: str) -> None:
        jd = self._jobdir(name)
        self.cancel(name)
        control.stop_leftovers(jd)  # its records go with the directory: last look first
        shutil.rmtree(jd.root, ignore_errors=True)

    def capabilities(self) -> Capabilities:
        names = tuple(n for n, s in CATALOG.items() if not s.needs_tpu)
        return Capabilities(
            gpus=len(gpus.detect_gpus()), strategies=names, resource_metrics=True,
            detail={"data_dir": str(self.root.parent)},
        )  # fmt: skip


def _plain_name(name: str) -> bool:
    """A name that is one directory entry: never a path, never hidden."""
    return bool(name) and "/" not in name and "\0" not in name and not name.startswith(".")


def _aborted(name: str, error: BaseException, where: Path) -> DDLError:
    """The error of a submit that stopped part-way: a full disk is named as such."""
    if diskfull.is_full(error):
        assert isinstance(error, OSError)
        why = diskfull.message(error.filename or where)
        return ResourceError(
            tr("{name} was not submitted: {why}; nothing was left", name=name, why=why),
            hint=tr("free space there, or point JUPYTER_DDL_DATA_DIR at another disk"),
        )
    return SubmitAborted(aborted_message(name, error, where))


def aborted_message(name: str, error: BaseException, where: Path) -> str:
    """One line saying that ``name`` was not submitted, why, and that nothing is left."""
    if isinstance(error, KeyboardInterrupt):
        why = tr("the submit was interrupted")
    elif isinstance(error, OSError) and error.errno == errno.ENOSPC:
        why = f"no space left on the device holding {where.parent}"
    else:
        detail = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        why = tr(
            "writing the job directory failed ({detail})", detail=detail or type(error).__name__
        )
    return tr(
        "{name} was not submitted: {why}; nothing was left, so the cell can run again",
        name=name, why=why,
    )  # fmt: skip


def _discard(root: Path) -> None:
    """Remove a half-written job directory, even when a second Ctrl-C arrives meanwhile."""
    for _ in range(3):
        try:
            shutil.rmtree(root, ignore_errors=True)
            return
        except KeyboardInterrupt:
            continue
