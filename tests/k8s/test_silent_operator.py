"""Is the operator running? Judged by what it creates, per release (operator-contract.md
§11.11): Trainer v2.0 writes no TrainJob status before the end, so a TrainJob whose
pods are slow to come is not taken for one nobody watches while its JobSet exists."""

from __future__ import annotations

import threading

import pytest

from jupyter_ddl.backends.kubernetes.watch import JobWatcher
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.core.kinds import TRAINJOB
from jupyter_ddl.models import EventKind, JobSpec

from .test_findings import name


def _hints(b, job: str, seconds: float) -> list[str]:
    stop = threading.Event()
    threading.Timer(seconds, stop.set).start()
    watcher = JobWatcher(b.conn, TRAINJOB, job, stop=stop, usage_every=0, no_status_after=0.5)
    return [e.message or "" for e in watcher.events() if e.kind == EventKind.WAITING]


@pytest.mark.parametrize("case", ["slow-pods", "no-operator"])
def test_a_v2_0_trainjob_is_judged_by_its_jobset(make_backend, double, case):
    double.use_trainer("v2.0.0")
    b = make_backend()
    spec = JobSpec(name=name("quiet"), strategy="torch-ddp", target="TrainJob",
                   replicas={"Node": 1}, command=["sh", "-c", "sleep 1"])  # fmt: skip
    if case == "no-operator":
        double.operator.enabled = False
    else:
        double.operator.late[spec.name] = 4.0  # pods come after 4 s; no status till the end
    b.submit(spec, build_bundle("pass\n"))
    hints = [h for h in _hints(b, spec.name, 3.0) if "has no status and no pod" in h]
    if case == "no-operator":
        assert hints and "running, and watching namespace" in hints[0], hints
    else:
        assert hints == [], hints
    double.operator.enabled = True
    b.cancel(spec.name)
