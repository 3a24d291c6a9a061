"""The per-job supervisor (its process: ``supervisor_main``).

Started by LocalBackend.submit in its own session, so it outlives the kernel (or a
warm spare becomes it, see ``spare``). It
installs requirements, reserves ports, starts every replica with the operator's
environment, applies restartPolicy / backoffLimit / activeDeadlineSeconds as the
operator does, decides the end state, and keeps ``status.json`` current. A SIGTERM
(or the ``cancel`` file) cancels the job, from its first instant: the handlers are in
place before ``supervisor.json`` says "ready". At the end every process below the
supervisor (it is their subreaper, see ``ownership``) is stopped, so nothing is left
behind; its files are private to the user (umask 077; replicas keep the kernel's).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from functools import partial

from jupyter_ddl.backends.local import control, forked, gpus, launch, ownership, ports, requirements
from jupyter_ddl.backends.local.forked import Fresh
from jupyter_ddl.backends.local.jobdir import JobDir
from jupyter_ddl.backends.local.mpi_output import mpirun_tag_space
from jupyter_ddl.backends.local.pump import OutputPump
from jupyter_ddl.backends.local.replica import Replica, mpi_rank_pids
from jupyter_ddl.backends.local.stall import Quiet
from jupyter_ddl.backends.local.tracking import JobProcesses, updated_message
from jupyter_ddl.core import contract, failures
from jupyter_ddl.core import restarts as policy
from jupyter_ddl.core.metrics import is_metric_line, parse_metric_line
from jupyter_ddl.core.stream import COLD_START
from jupyter_ddl.models import JobState, JobStatus, ReplicaState, ReplicaStatus

TICK = 0.1  # polling period where process exits cannot be heard (no pidfd)
IDLE = 0.5  # the loop's longest sleep when exits wake it: cancel file, MPI ranks
STATUS_EVERY = 1.0  # seconds between status writes while only log lines change
SUCCESS_GRACE = 5.0  # replicas still running when the job succeeded get this long to end
# ...and when it failed: a crashing replica's peers often notice (and exit) before the
# crashing process itself is gone; its own exit code is what says what happened
FAILURE_SETTLE = 1.0
HOUSEKEEPING = 2.0  # seconds between scans of the processes below (records, orphans, CPU)


class Supervisor:
    def __init__(
        self,
        jobdir: JobDir,
        stop: threading.Event | None = None,
        umask: int = 0o022,
        *,
        fresh: Fresh | None = None,
        cold: str | None = None,
    ) -> None:
        self.jd = jobdir
        self.fresh, self.cold = fresh, cold
        self.stop_asked = stop or threading.Event()  # set by SIGTERM/SIGINT/SIGHUP
        self.umask = umask
        self.spec = jobdir.spec()
        self.shape = self.spec.shape
        self.kind = self.shape.job_kind
        self.local = jobdir.local()
        self.data_dir = jobdir.root.parent.parent
        handle = jobdir.handle()
        self.status = JobStatus(
            name=self.spec.name,
            backend="local",
            strategy=self.spec.strategy,
            state=JobState.PENDING,
            replicas=[ReplicaStatus(r, i) for r, i in self.shape.replica_ids],
            created=handle.created,
            notebook=handle.notebook,
            code_digest=handle.code_digest,
            cell_id=handle.cell_id,
            backoff_limit=self.spec.effective_backoff_limit,
        )
        self.replicas: list[Replica] = []
        # what the status shows beside each replica: its rank, when it last ended
        # (the failure order the root cause is read from), its latest metrics
        self.ranks = {r.rid: r.rank for r in self.shape.replicas}
        self.ended: dict[str, float] = {}
        self.latest: dict[str, dict[str, float]] = {}
        self.procs = JobProcesses(jobdir, float(self.local.get("stall_seconds") or 0))
        self._next_house = 0.0
        # Replica exits (heard by the pump), signals and timers wake the loop: it does
        # not poll while replicas train, so it takes no CPU from them.
        self.wake = threading.Event()
        self.pump = OutputPump(self.wake.set)
        self._dirty = True
        self._written = 0.0

    # -- status ----------------------------------------------------------------------
    def on_line(self, replica: Replica, text: str) -> None:
        m = parse_metric_line(text)
        if m is not None:
            self.status.metrics.update(m.values)
            self.latest.setdefault(replica.rid, {}).update(m.values)

    def write_status(self, force: bool = False) -> None:
        now = time.time()
        if not (force or self._dirty or now - self._written >= STATUS_EVERY):
            return
        if self.replicas:
            self.status.replicas = [self._replica_status(r) for r in self.replicas]
        self.jd.write_status(self.status)
        self._dirty, self._written = False, now

    def _replica_status(self, r: Replica) -> ReplicaStatus:
        st = r.status()
        st.last_lines = failures.status_tail(
            r.rid,
            [t for t in r.last if not is_metric_line(t)],
            r.state in (ReplicaState.FAILED, ReplicaState.RESTARTING, ReplicaState.TERMINATED),
        )
        st.rank = self.ranks.get(r.rid)
        st.ended = self.ended.get(r.rid)
        st.metrics = dict(self.latest.get(r.rid, {}))
        return st

    # -- setup -----------------------------------------------------------------------
    def prepare(self) -> None:
        python = self.local.get("python") or sys.executable
        pythonpath = ""
        reqs = self.jd.requirements()
        if reqs and not self.stopping:
            self.status.message = "installing requirements"
            self.write_status(force=True)
            pythonpath = str(
                requirements.install(
                    self.data_dir, reqs, python, self.jd.setup_log, stopped=self.stop_asked.is_set
                )
            )
            self.status.message = None
        n = self.shape.total
        reserved = ports.reserve(self.data_dir, self.spec.name, n + 1)
        endpoints = contract.local_endpoints(self.spec, reserved[:n])
        assigned = gpus.assign_gpus(self.shape.gpu_requests(), gpus.detect_gpus())
        hosts = self.shape.mpi_hosts
        if hosts is not None:
            self.jd.hostfile.write_text(contract.mpi_hostfile(self.spec, endpoints, local=True))
        launches = launch.plan(
            self.spec,
            python=python,
            entry=str(self.jd.bundle_dir / "main.py"),
            hostfile=str(self.jd.hostfile),
            endpoints=endpoints,
            gpus=assigned,
            environ=control.replica_environ(),
            passthrough=self.local.get("env_passthrough") or (),
            pythonpath=pythonpath,
            mpi_port=reserved[-1],
            as_root=os.geteuid() == 0,
            marker=(ownership.MARKER_ENV, str(self.jd.root)),
            teardown_timeout=self.local.get("teardown_timeout"),
        )
        for item in launches:
            rpolicy = policy.restart_policy(self.kind, item.role, self.spec.restart_policy)
            log = self.jd.log_path(item.rid)
            self.replicas.append(
                Replica(item, log, rpolicy, self.on_line, self.pump, umask=self.umask)
            )
        self._choose_starts()
        launcher = next((r for r in self.replicas if r.launch.role == "Launcher"), None)
        if launcher is not None and hosts is not None:
            by_rid = {r.launch.rid: r for r in self.replicas}  # the launcher may be a host
            workers = [by_rid[h] for h in self.shape.mpi_host_ids]
            slots = self.shape.mpi_slots
            launcher.mpi_ranks = {
                rank: workers[rank // slots] for rank in range(len(workers) * slots)
            }
            argv = launcher.launch.argv or []
            if argv[:1] == ["mpirun"]:
                launcher.mpi_tag_space = mpirun_tag_space(argv[0], launcher.launch.env)

    def _choose_starts(self) -> None:
        """Fork each replica from this warm interpreter where it can be; the first
        replica's log says why a job with a warm path could not (``cold start: ...``)."""
        why, fresh = self.cold, self.fresh
        if fresh is not None and (now := forked.why_not_now()) is not None:
            why, fresh = why or now, None
        if fresh is not None:
            for r in self._processes():
                reason = forked.why_cold(r.launch, fresh)
                if reason is None:
                    r.fork = partial(forked.fork_replica, fresh, r.launch, umask=self.umask)
                why = why or reason
        if why and self.replicas:
            self.replicas[0].note(f"{COLD_START}{why}")

    # -- the loop --------------------------------------------------------------------
    @property
    def stopping(self) -> bool:
        return self.stop_asked.is_set() or self.jd.cancel_path.exists()

    def run(self) -> None:
        cwd = self.local.get("cwd") or str(self.jd.root)
        if not os.path.isdir(cwd):
            cwd = str(self.jd.root)
        for r in self._processes():
            if self.stopping:  # a cancel while replicas start: start no more
                break
            self._start(r, cwd)
        self.status.state = JobState.RUNNING
        self.status.started = time.time()
        self.procs.restart_clock(self.status.started)
        self._dirty = True
        while True:
            self.wake.clear()  # what happens from here on wakes the sleep below
            now = time.time()
            if self.stopping:
                return self.finish(JobState.CANCELLED, "cancelled by the user")
            if policy.deadline_passed(self.status.started, now, self.spec.active_deadline_seconds):
                msg = f"{self.kind} {self.spec.name} was active longer than the specified deadline ({self.spec.active_deadline_seconds}s)"
                return self.finish(JobState.FAILED, msg)
            for r in self._processes():
                if r.poll():
                    self.on_exit(r)
                elif r.state == ReplicaState.RESTARTING and now >= r.restart_at:
                    self._start(r, cwd)
                    self._dirty = True
            self._mirror_mpi_workers()
            outcome = policy.job_outcome(self.kind, self._states())
            if outcome is not None:
                return self.finish(outcome, None)  # a failure's message: after the settle
            self.status.state = (
                JobState.RESTARTING
                if any(r.state == ReplicaState.RESTARTING for r in self.replicas)
                else JobState.RUNNING
            )
            if now >= self._next_house:
                self._next_house = now + HOUSEKEEPING
                self._housekeeping(now)
            self.write_status()
            self.wake.wait(self._sleep(now))

    def _start(self, r: Replica, cwd: str) -> None:
        r.start(cwd)
        if r.pid is not None:
            self.procs.record([r.pid])

    def _own_pids(self) -> set[int]:
        return {r.proc.pid for r in self.replicas if r.proc is not None}

    def _housekeeping(self, now: float) -> None:
        """Record the processes below, collect orphans, notice a job that stopped moving."""
        quiet = [
            Quiet(r.rid, r.last_output, r.finished_at)
            for r in self.replicas
            if r.state == ReplicaState.RUNNING and not r.mpi_ranks  # mpirun: its ranks speak
        ]
        note = self.procs.scan(quiet, self._own_pids(), now)
        message = updated_message(self.status.message, note)
        if message != self.status.message:
            self.status.message, self._dirty = message, True

    def _sleep(self, now: float) -> float:
        """Until the next thing that no event announces: a restart, the deadline."""
        longest = IDLE if self.pump.exits_heard else TICK
        due = [r.restart_at for r in self.replicas if r.state == ReplicaState.RESTARTING]
        if self.spec.active_deadline_seconds and self.status.started:
            due.append(self.status.started + self.spec.active_deadline_seconds)
        return max(0.0, min([longest, *(t - now for t in due)]))

    def _processes(self) -> list[Replica]:
        return [r for r in self.replicas if r.launch.argv is not None]

    def _states(self) -> dict[tuple[str, int], ReplicaState]:
        return {(r.launch.role, r.launch.index): r.state for r in self.replicas}

    def on_exit(self, r: Replica) -> None:
        self._dirty = True
        self.ended[r.rid] = time.time()
        how = policy.explain_exit(r.exit_code, r.signal, list(r.last))
        decision = policy.on_exit(r.policy, r.exit_code, r.signal)
        ok = r.exit_code == 0 and r.signal is None
        key = (r.launch.role, r.launch.index)
        with_success = {**self._states(), key: ReplicaState.SUCCEEDED}
        # Always restarts even a success, unless that success has finished the job
        if (
            decision == policy.Exit.RESTART
            and ok
            and (policy.job_outcome(self.kind, with_success) == JobState.SUCCEEDED)
        ):
            decision = policy.Exit.SUCCEEDED
        if decision == policy.Exit.SUCCEEDED:
            r.state = ReplicaState.SUCCEEDED
            return
        r.message = how
        if decision == policy.Exit.FAILED:
            r.state = ReplicaState.FAILED
            r.note(f"{r.rid} ended with {how}; restartPolicy {r.policy.value}: not restarted")
            return
        total = sum(x.restarts for x in self.replicas)
        limit = self.spec.effective_backoff_limit  # a default, so a crash loop ends
        if policy.backoff_exceeded(total, limit):
            r.state = ReplicaState.FAILED
            self.status.message = f"{self.kind} {self.spec.name} has failed because it has reached the specified backoff limit ({limit})"
            r.note(f"{r.rid} ended with {how}; backoff limit {limit} reached")
            return
        r.state = ReplicaState.RESTARTING
        r.restart_at = time.time() + policy.backoff_delay(r.restarts)
        r.restarts += 1
        r.note(f"{r.rid} ended with {how}; restart {r.restarts} (restartPolicy {r.policy.value})")

    def _mirror_mpi_workers(self) -> None:
        # Local MPI workers are the ranks of the launcher's mpirun: they share its state.
        launcher = next((r for r in self.replicas if r.mpi_ranks), None)
        if launcher is None:
            return
        if launcher.state == ReplicaState.RUNNING and launcher.pid:
            for rank, pid in mpi_rank_pids(launcher.pid).items():
                launcher.mpi_ranks[rank].pid = pid
        for w in set(launcher.mpi_ranks.values()):
            w.restarts = launcher.restarts
            if w.state != launcher.state and launcher.state != ReplicaState.FAILED:
                w.state = launcher.state
                self._dirty = True

    def _failure_message(self) -> str:
        """The root cause first (failures.diagnose), then the operator-style reason."""
        statuses = [self._replica_status(r) for r in self.replicas]
        if any(
            r.launch.role == "Launcher" and r.state == ReplicaState.FAILED for r in self.replicas
        ):
            for st, r in zip(statuses, self.replicas, strict=True):
                if r.launch.argv is None:  # MPI ranks have no process: they fail with mpirun
                    st.state = ReplicaState.FAILED
        found = failures.diagnose(failures.outcomes(statuses))
        base = self.status.message or f"{self.kind} {self.spec.name} failed"
        return f"{found.line} — {base}" if found.root else base

    # -- the end ---------------------------------------------------------------------
    def finish(self, state: JobState, message: str | None) -> None:
        if state == JobState.SUCCEEDED:
            # servers are stopped at once
            self._let_end(SUCCESS_GRACE, set(self.shape.strategy.server_roles))
        elif state == JobState.FAILED:
            self._let_end(FAILURE_SETTLE, set())
            # composed now: the replica that crashed first often exits after the peers
            # it took down, and its own exit is what names the root cause
            message = message or self._failure_message()
        if state == JobState.CANCELLED:  # before any stop: peers' errors after it are teardown
            for r in self.replicas:
                r.note(failures.CANCEL_MARKER)
        for r in self._processes():
            if r.proc is not None:
                r.note(f"{r.rid} stopped: the job is {state.value.lower()}")
        self.procs.stop_all(self._own_pids())
        for r in self._processes():
            if r.proc is not None:
                r.release()
                r.state, r.pid = ReplicaState.TERMINATED, None
            elif not r.state.finished:
                r.state = ReplicaState.TERMINATED
        if not self.replicas:  # the job ended before any replica started
            for rs in self.status.replicas:
                rs.state = ReplicaState.TERMINATED
        final = {JobState.SUCCEEDED: ReplicaState.SUCCEEDED, JobState.FAILED: ReplicaState.FAILED}
        for r in self.replicas:
            if r.launch.argv is None:  # MPI workers end with their launcher
                r.state = final.get(state, ReplicaState.TERMINATED)
                r.pid = None
            r.close()
        self.status.state, self.status.message = state, message
        self.status.finished = time.time()
        self.write_status(force=True)
        self.pump.close()

    def _let_end(self, seconds: float, skip: set[str]) -> None:
        """Give replicas (but those of the ``skip`` roles) that end on their own this
        long to do so, and record how each one ended."""
        deadline = time.time() + seconds
        while time.time() < deadline and not self.stopping:
            waiting = [
                r for r in self._processes() if r.proc is not None and r.launch.role not in skip
            ]
            if not waiting:
                return
            for r in waiting:
                if r.poll():
                    self.ended[r.rid] = time.time()
                    ok = r.exit_code == 0 and r.signal is None
                    r.state = ReplicaState.SUCCEEDED if ok else ReplicaState.FAILED
                    r.message = None if ok else policy.describe_exit(r.exit_code, r.signal)
            time.sleep(TICK)
