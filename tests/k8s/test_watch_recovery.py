"""A watch producer that fails says so and recovers: the job's stream shows "lost
contact with the API: <cause>; retrying" (the dashboard too), the failure is logged
with its traceback, and the stream goes on to the job's end with every line."""

from __future__ import annotations

import logging
import threading
import uuid

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.manifests import CODE_DIR
from jupyter_ddl.models import EventKind, JobSpec, JobState
from jupyter_ddl.present.state import DashboardState
from jupyter_ddl.present.text import header_text

PODS = "core/v1/pods"


def test_a_failing_pod_watch_is_reported_and_the_stream_recovers(backend, double, caplog):
    spec = JobSpec(name=f"lost-{uuid.uuid4().hex[:6]}", strategy="tf-mirrored",
                   replicas={"Worker": 1}, command=["python", "-u", f"{CODE_DIR}/cell.py"])  # fmt: skip
    backend.submit(spec, build_bundle("print('after the outage', flush=True)\n"))
    # the watcher's first two pod lists come back mangled: a KeyError in the producer
    double.state.garbled[PODS] = 2
    stop = threading.Event()
    timer = threading.Timer(40, stop.set)
    timer.start()
    try:
        with caplog.at_level(logging.INFO, logger="jupyter_ddl.backends.kubernetes.listwatch"):
            events = list(backend.watch(spec.name, stop=stop))
    finally:
        timer.cancel()
    assert double.state.garbled[PODS] == 0, "the double's fault was not hit"

    lost = [i for i, e in enumerate(events) if (e.message or "").startswith("lost contact")]
    assert len(lost) == 1, [e.message for e in events if e.message]  # once per outage
    message = events[lost[0]].message
    assert message == "lost contact with the API: watching its pods: KeyError: 'metadata'; retrying"
    assert events[lost[0]].kind == EventKind.WAITING and events[lost[0]].replica is None
    traced = [r for r in caplog.records if r.exc_info and r.exc_info[0] is KeyError]
    assert len(traced) == 1 and "watching its pods failed" in traced[0].getMessage()

    dashboard = DashboardState(spec.name)
    for ev in events[: lost[0] + 1]:
        dashboard.apply(ev)
    assert f"— {message}" in header_text(dashboard)

    # recovered: the pods were listed again, the line arrived, the job's end too
    assert [e.log.text for e in events if e.kind == EventKind.LOG] == ["after the outage"]
    assert events[-1].kind == EventKind.STATUS and events[-1].status.state == JobState.SUCCEEDED


def test_a_watch_refused_for_a_moment_after_an_api_restart_goes_on(backend, double):
    """A restarted API server answers 403 until its RBAC caches are filled (seen on the
    real tier): a watch that was allowed is retried through it, not ended as refused."""
    spec = JobSpec(name=f"rbac-{uuid.uuid4().hex[:6]}", strategy="tf-mirrored",
                   replicas={"Worker": 1}, command=["python", "-u", f"{CODE_DIR}/cell.py"])  # fmt: skip
    cell = (
        "import time\nfor i in range(12):\n    print('tick', i, flush=True)\n    time.sleep(0.25)\n"
    )
    backend.submit(spec, build_bundle(cell))
    refused = {("watch", "tfjobs"), ("list", "tfjobs"), ("watch", "pods"), ("list", "pods")}
    events = []
    for ev in backend.watch(spec.name):
        events.append(ev)
        if ev.kind == EventKind.LOG and ev.log.text == "tick 1":
            double.state.denied |= refused
            double.state.drop_streams()
            threading.Timer(2.0, lambda: double.state.denied.difference_update(refused)).start()
    assert [e.log.text for e in events if e.kind == EventKind.LOG] == [
        f"tick {i}" for i in range(12)
    ]
    assert events[-1].kind == EventKind.STATUS and events[-1].status.state == JobState.SUCCEEDED


def test_a_pod_deleted_before_its_log_was_opened_leaves_a_line_that_says_so(backend):
    """An operator deletes a job's running pods when it ends (cleanPodPolicy Running),
    and the kubelet their logs with them: a replica whose pod went before its follow
    first opened gets one line saying its lines are lost, not silence."""
    from jupyter_ddl.backends.kubernetes.multiplex import LogMultiplexer

    got: list[tuple[str, list]] = []
    done = threading.Event()

    def emit(rid, batch):
        got.append((rid, list(batch)))
        return True

    mux = LogMultiplexer(
        backend.conn, emit, still_running=lambda pod, cid: False, on_done=lambda cid: done.set()
    )
    try:
        mux.follow(f"gone-{uuid.uuid4().hex[:6]}-worker-1", None, "containerd://0", "worker-1")
        assert done.wait(20), "the follow of a deleted pod never finished"
    finally:
        mux.close()
    assert len(got) == 1, got
    rid, [(stamp, text)] = got[0]
    assert rid == "worker-1" and stamp is None
    assert "was deleted before its log was opened" in text and "its lines went with it" in text
