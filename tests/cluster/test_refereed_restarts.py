"""Scenarios on both tiers: things that restart. A replica that crashes (the kubelet's
restarts and back-off, the operator's backoff limit, the root cause in the cell) and an
API server that goes away mid-follow (every watch and log follow cut, the resumed
watches answered 410 Gone): the cell still shows every line once, in order.
"""

from __future__ import annotations

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.models import EventKind, JobSpec, JobState
from tests.cluster.test_refereed_jobs import RUN_CELL, final_state, follow, lines, name, waiting

CRASH_CELL = """
import torch.distributed as dist
if dist.get_rank() == 1:
    raise ValueError('rank one is broken')
dist.barrier()
"""


def test_a_crashing_replica_ends_failed_with_its_root_cause(cluster):
    backend = cluster.backend()
    # three restarts allowed (the operator counts both pods'): the kubelet restarts a
    # crashed container at once the first time and only then backs off (10 s on the real
    # tier), so CrashLoopBackOff shows before the restarts that end the job
    spec = JobSpec(name=name("crash"), strategy="torch-ddp", replicas={"Master": 1, "Worker": 1},
                   backoff_limit=3)  # fmt: skip
    backend.submit(spec, build_bundle(CRASH_CELL))
    events = follow(backend, spec.name, 240)
    status = [e.status for e in events if e.kind == EventKind.STATUS and e.status][-1]
    assert status.state is JobState.FAILED, (status.message, waiting(events))
    message = status.message or ""
    assert message.startswith("worker-0 · rank 1 failed first: ValueError: rank one is broken"), (
        message
    )
    assert "ValueError: rank one is broken" in lines(events).get("worker-0", [])
    # the kubelet's back-off was shown while it lasted
    assert any("CrashLoopBackOff" in w for w in waiting(events)), waiting(events)
    # and the operator's own verdict: its backoff limit, reached by that restart
    assert message.endswith(f" — Job {spec.name} has failed because it has reached the "
                            "specified backoff limit"), message  # fmt: skip


def test_an_api_server_restart_mid_follow_loses_and_repeats_no_line(cluster):
    backend = cluster.backend()
    ticks = 30
    cell = (
        "import time\n"
        f"for i in range({ticks}):\n"
        "    print('tick', i, flush=True)\n"
        "    time.sleep(0.2)\n"
    )
    spec = JobSpec(name=name("gone"), strategy="tf-mirrored", replicas={"Worker": 1},
                   command=RUN_CELL)  # fmt: skip
    backend.submit(spec, build_bundle(cell))
    restarted = False

    def restart_once(events) -> bool:
        nonlocal restarted
        if not restarted and any(
            e.kind == EventKind.LOG and e.log.text == "tick 2" for e in events
        ):
            restarted = True
            cluster.restart_api()
        return False

    events = follow(backend, spec.name, 180, until=restart_once)
    assert restarted
    got = lines(events).get("worker-0", [])
    assert got == [f"tick {i}" for i in range(ticks)], got
    assert final_state(events) is JobState.SUCCEEDED, waiting(events)


def test_a_log_rotated_while_the_follow_was_cut_loses_nothing_unsaid(cluster):
    """The API server's restart cuts the follow while the cell writes fast enough for
    the kubelet to rotate its log (at LOG_MAX_SIZE) before the follow resumes; the
    kubelet serves only the current file. Every line arrives once, in order, and where
    lines are missing the cell says so, naming the span, just before the lines resume."""
    backend = cluster.backend()
    ticks = 1500
    cell = (
        "import time\n"
        f"for i in range({ticks}):\n"
        "    print('tick', i, 'x' * 240, flush=True)\n"
        "    time.sleep(0.004)\n"
    )
    spec = JobSpec(name=name("rot"), strategy="tf-mirrored", replicas={"Worker": 1},
                   command=RUN_CELL)  # fmt: skip
    backend.submit(spec, build_bundle(cell))
    restarted = False

    def restart_once(events) -> bool:
        nonlocal restarted
        if not restarted and any(e.kind == EventKind.LOG and e.log.text.startswith("tick 20 ")
                                 for e in events):  # fmt: skip
            restarted = True
            cluster.restart_api()
        return False

    events = follow(backend, spec.name, 240, until=restart_once)
    assert restarted and final_state(events) is JobState.SUCCEEDED, waiting(events)
    assert cluster.rotated(spec.name) >= 1, "the log never rotated"
    got = lines(events).get("worker-0", [])
    numbers = [int(t.split()[1]) for t in got if t.startswith("tick ")]
    assert numbers == sorted(set(numbers)), "a line came twice or out of order"
    assert numbers[0] == 0 and numbers[-1] == ticks - 1, (numbers[:3], numbers[-3:])
    # each jump over missing lines comes right after the note that names the span
    for before, text in zip(got, got[1:], strict=False):
        if not (before.startswith("tick ") and text.startswith("tick ")):
            continue
        if int(text.split()[1]) != int(before.split()[1]) + 1:
            raise AssertionError(f"lines lost unsaid between {before[:10]!r} and {text[:10]!r}")
    notes = [t for t in got if " may be lost: its log was rotated" in t]
    for note in notes:
        after = got[got.index(note) + 1]
        assert after.startswith("tick "), after
