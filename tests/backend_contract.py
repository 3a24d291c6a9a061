"""The contract every backend honours, as plain test functions (no backend named here).

Use it from a backend's test module::

    from tests.backend_contract import *  # noqa: F401,F403 - collects the contract tests

Fixtures the including module (or its conftest) must provide:

- ``backend``: a ready :class:`jupyter_ddl.backends.Backend` instance; the fixture
  should cancel what is left running at teardown.

Optional:

- ``make_job``: a callable ``make_job(code: str) -> (JobSpec, CodeBundle)`` giving a
  tiny one-replica job with a fresh unique name that runs ``code`` as the cell. The
  default is :func:`default_make_job` (a one-replica ``tf-mirrored`` job: the runtime
  shim imports no framework for it, so the replica starts in well under a second);
  override it to add an image, namespace or backend options.
- ``contract_timeout``: seconds to wait for a job to finish (default 90).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable

import pytest

from jupyter_ddl.backends import Backend
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.errors import JobConflict, JobNotFound
from jupyter_ddl.models import (
    Capabilities,
    CodeBundle,
    EventKind,
    JobHandle,
    JobSpec,
    JobState,
    ReplicaState,
)

MakeJob = Callable[[str], tuple[JobSpec, CodeBundle]]


def default_make_job(code: str, **spec_fields) -> tuple[JobSpec, CodeBundle]:
    """A one-replica job named ``ct-<random>`` running ``code``."""
    spec = JobSpec(
        name=f"ct-{uuid.uuid4().hex[:8]}",
        strategy="tf-mirrored",
        replicas={"Worker": 1},
        **spec_fields,
    )
    return spec, build_bundle(code)


@pytest.fixture
def make_job() -> MakeJob:
    return default_make_job


@pytest.fixture
def contract_timeout() -> float:
    return 90.0


def wait_finished(backend: Backend, name: str, timeout: float):
    """Poll ``get`` until the job finished; fails the test on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        status = backend.get(name)
        if status.state.finished:
            return status
        if time.monotonic() > deadline:
            pytest.fail(f"job {name} still {status.state.value} after {timeout}s")
        time.sleep(0.2)


def wait_for_line(backend: Backend, name: str, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(text in line.text for line in backend.logs(name)):
            return
        time.sleep(0.2)
    pytest.fail(f"job {name} never printed {text!r} within {timeout}s")


def test_contract_submit_get_list_logs(backend: Backend, make_job: MakeJob, contract_timeout):
    spec, bundle = make_job("print('hello from the cell')\nprint('second line')\n")
    handle = backend.submit(spec, bundle)
    assert isinstance(handle, JobHandle) and handle.name == spec.name
    assert handle.backend == backend.name
    status = wait_finished(backend, spec.name, contract_timeout)
    assert status.state == JobState.SUCCEEDED, status.message
    assert status.name == spec.name and status.strategy == spec.strategy
    assert [r.state for r in status.replicas] == [ReplicaState.SUCCEEDED]
    assert spec.name in [s.name for s in backend.list()]
    texts = [line.text for line in backend.logs(spec.name)]
    assert texts.index("hello from the cell") < texts.index("second line")
    lines = list(backend.logs(spec.name, tail=1))
    assert [line.text for line in lines] == ["second line"]
    first = next(line for line in backend.logs(spec.name) if line.text == "second line")
    again = list(backend.logs(spec.name, offset=first.offset))
    assert again[0].text == "second line" and again[0].offset == first.offset
    # following a finished job gives what is there and ends
    followed = list(backend.logs(spec.name, offset=first.offset, follow=True))
    assert [line.text for line in followed][:1] == ["second line"]
    # a replica is looked up among the job's: its own lines, or one line naming them
    (rid,) = {line.replica for line in backend.logs(spec.name)}
    assert [line.text for line in backend.logs(spec.name, replica=rid)] == texts
    with pytest.raises(JobNotFound) as e:
        list(backend.logs(spec.name, replica="../no-such-replica"))
    assert rid in str(e.value)


def test_contract_watch_streams_status_logs_and_metrics(
    backend: Backend, make_job: MakeJob, contract_timeout
):
    spec, bundle = make_job(
        "for s in range(3):\n    report(step=s, loss=1.0 / (s + 1))\nprint('done')\n"
    )
    backend.submit(spec, bundle)
    stop = threading.Event()
    timer = threading.Timer(contract_timeout, stop.set)
    timer.start()
    try:
        events = list(backend.watch(spec.name, stop=stop))
    finally:
        timer.cancel()
    kinds = [e.kind for e in events]
    assert kinds[-1] == EventKind.STATUS and events[-1].status is not None
    assert events[-1].status.state == JobState.SUCCEEDED
    logs = [e.log.text for e in events if e.kind == EventKind.LOG and e.log]
    assert "done" in logs
    metrics = [e for e in events if e.kind == EventKind.METRIC]
    assert [m.step for m in metrics] == [0, 1, 2]
    assert metrics[-1].metrics == {"loss": pytest.approx(1 / 3)}
    assert any(e.kind == EventKind.REPLICA for e in events)


def test_contract_failure_names_replica_exit_code_and_keeps_traceback(
    backend: Backend, make_job: MakeJob, contract_timeout
):
    spec, bundle = make_job("print('about to fail')\nraise ValueError('boom in the cell')\n")
    backend.submit(spec, bundle)
    status = wait_finished(backend, spec.name, contract_timeout)
    assert status.state == JobState.FAILED
    (replica,) = status.replicas
    assert replica.state == ReplicaState.FAILED and replica.exit_code == 1
    assert replica.id in (status.message or "")
    texts = [line.text for line in backend.logs(spec.name)]
    assert any("ValueError: boom in the cell" in t for t in texts)


def test_contract_name_taken_and_unknown_names(
    backend: Backend, make_job: MakeJob, contract_timeout
):
    spec, bundle = make_job("print('x')\n")
    backend.submit(spec, bundle)
    with pytest.raises(JobConflict) as e:
        backend.submit(spec, bundle)
    assert spec.name in str(e.value)
    wait_finished(backend, spec.name, contract_timeout)
    for call in (backend.get, backend.cancel, backend.delete):
        with pytest.raises(JobNotFound):
            call("no-such-job-here")


def test_contract_cancel_and_delete(backend: Backend, make_job: MakeJob, contract_timeout):
    spec, bundle = make_job("import time\nprint('started', flush=True)\ntime.sleep(300)\n")
    backend.submit(spec, bundle)
    wait_for_line(backend, spec.name, "started", contract_timeout)
    status = backend.cancel(spec.name)
    assert status.state == JobState.CANCELLED
    assert backend.get(spec.name).state == JobState.CANCELLED
    assert backend.cancel(spec.name).state == JobState.CANCELLED  # idempotent
    backend.delete(spec.name)
    with pytest.raises(JobNotFound):
        backend.get(spec.name)
    assert spec.name not in [s.name for s in backend.list()]


def test_contract_capabilities(backend: Backend):
    caps = backend.capabilities()
    assert isinstance(caps, Capabilities)
    assert "torch-ddp" in caps.strategies and caps.gpus >= 0
