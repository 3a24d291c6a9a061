"""Following the logs of many pods at once, against the API double: every line of
every pod once and in order, with a number of threads that does not grow with the
pods, also when every stream is cut halfway. Not timed: counts only."""

from __future__ import annotations

import threading
import time
import uuid

from jupyter_ddl.backends.kubernetes.multiplex import OPENERS
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.manifests import CODE_DIR
from jupyter_ddl.models import CleanPodPolicy, EventKind, JobSpec, JobState

# the job's own watch threads (job, pods, events, usage) and the multiplexer's
THREAD_BOUND = 4 + 1 + OPENERS


def ours() -> int:
    """Threads of the watcher (the double runs in this process too: not counted)."""
    return sum(t.name.startswith("ddl-k8s") for t in threading.enumerate())


CELL = """\
import os, time
rank, lines = os.environ["RANK"], int(os.environ["LINES"])
for i in range(lines):
    print(f"L {rank} {i}", flush=True)
    time.sleep(float(os.environ["PAUSE"]))
open(os.path.join(os.environ["MARKS"], "done-" + rank), "w").close()
while rank == "0" and len(os.listdir(os.environ["MARKS"])) < int(os.environ["WORLD_SIZE"]):
    time.sleep(0.05)  # the master's end ends a PyTorchJob: it waits for the others
"""


def job(tmp_path, pods: int, lines: int, pause: float) -> tuple[JobSpec, object]:
    marks = tmp_path / uuid.uuid4().hex[:6]
    marks.mkdir()
    spec = JobSpec(
        name=f"many-{uuid.uuid4().hex[:6]}",
        strategy="torch-ddp",
        replicas={"Master": 1, "Worker": pods - 1},
        clean_pod_policy=CleanPodPolicy.NONE,
        command=["python", "-S", "-u", f"{CODE_DIR}/cell.py"],
        env={"LINES": str(lines), "PAUSE": str(pause), "MARKS": str(marks)},
    )
    return spec, build_bundle(CELL)


def follow(backend, name: str, on_log=None, timeout: float = 90.0):
    """(every LOG event's line, the most watcher threads at once, the last event)."""
    stop = threading.Event()
    timer = threading.Timer(timeout, stop.set)
    timer.start()
    logs, peak, last = [], ours(), None
    try:
        for ev in backend.watch(name, stop=stop):
            peak = max(peak, ours())
            last = ev
            if ev.kind == EventKind.LOG:
                logs.append(ev.log)
                if on_log is not None:
                    on_log(ev.log)
    finally:
        timer.cancel()
    return logs, peak, last


def check_every_line_once_in_order(logs, pods: int, lines: int) -> None:
    by_replica: dict[str, list[str]] = {}
    for ln in logs:
        by_replica.setdefault(ln.replica, []).append(ln.text)
    assert len(by_replica) == pods
    for rid, texts in by_replica.items():
        rank = texts[0].split()[1]
        assert texts == [f"L {rank} {i}" for i in range(lines)], rid
    for rid in by_replica:  # one numbering per replica, no gap, no repeat
        offsets = [ln.offset for ln in logs if ln.replica == rid]
        assert offsets == list(range(lines)), rid


def test_forty_pods_every_line_once_with_threads_that_do_not_grow_with_pods(backend, tmp_path):
    assert ours() == 0
    spec, bundle = job(tmp_path, pods=40, lines=30, pause=0.01)
    backend.submit(spec, bundle)
    logs, peak, last = follow(backend, spec.name)

    assert last.kind == EventKind.STATUS and last.status.state == JobState.SUCCEEDED
    check_every_line_once_in_order(logs, pods=40, lines=30)
    # one thread per container would be 40 more
    assert 0 < peak <= THREAD_BOUND
    deadline = time.monotonic() + 5  # ending watches are cut, not left to time out
    while ours() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ours() == 0, [t.name for t in threading.enumerate()]


def test_every_stream_cut_halfway_resumes_without_loss_or_repeat(backend, double, tmp_path):
    spec, bundle = job(tmp_path, pods=16, lines=40, pause=0.03)
    backend.submit(spec, bundle)
    cut: list[int] = []

    def cut_once(line) -> None:
        if not cut and line.text.endswith(" 15"):
            cut.append(double.state.drop_streams())

    logs, _, last = follow(backend, spec.name, on_log=cut_once)

    assert cut and cut[0] >= 2  # log streams (and watches) were really cut
    assert last.kind == EventKind.STATUS and last.status.state == JobState.SUCCEEDED
    check_every_line_once_in_order(logs, pods=16, lines=40)
    reopened = [p for _, p in double.requests("GET", "/log?") if "follow=true" in p.lower()]
    assert len(reopened) > 16  # some streams were opened again after the cut


GATED = """\
import os, time
rank, marks = os.environ["RANK"], os.environ["MARKS"]
for i in range(20):
    if i == 10:  # wait for the test to cut the streams, then finish at once
        while not os.path.exists(os.path.join(marks, "go")):
            time.sleep(0.01)
    print(f"L {rank} {i}", flush=True)
open(os.path.join(marks, "done-" + rank), "w").close()
while rank == "0" and len(os.listdir(marks)) < int(os.environ["WORLD_SIZE"]) + 1:
    time.sleep(0.05)
"""


def test_a_container_that_ends_while_its_stream_is_cut_still_gives_every_line(
    backend, double, tmp_path
):
    marks = tmp_path / "gated"
    marks.mkdir()
    spec = JobSpec(
        name=f"gated-{uuid.uuid4().hex[:6]}",
        strategy="torch-ddp",
        replicas={"Master": 1, "Worker": 3},
        clean_pod_policy=CleanPodPolicy.NONE,
        command=["python", "-S", "-u", f"{CODE_DIR}/cell.py"],
        env={"MARKS": str(marks)},
    )
    backend.submit(spec, build_bundle(GATED))
    tenth: set[str] = set()

    def cut_then_go(line) -> None:
        if line.text.endswith(" 9"):
            tenth.add(line.replica)
            if len(tenth) == 4:  # every pod waits: cut, and let them all end meanwhile
                assert double.state.drop_streams() >= 4
                (marks / "go").touch()

    logs, _, last = follow(backend, spec.name, on_log=cut_then_go)

    assert (marks / "go").exists()
    assert last.kind == EventKind.STATUS and last.status.state == JobState.SUCCEEDED
    check_every_line_once_in_order(logs, pods=4, lines=20)
