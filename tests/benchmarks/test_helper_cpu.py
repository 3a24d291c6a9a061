"""The helpers' CPU accounting of the training-overhead benchmark, against real
processes: a busy one named as the job's supervisor, an idle one as a spare."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from benchmarks import helper_cpu

BUSY = "import time\nend = time.process_time() + {s}\nwhile time.process_time() < end: pass\n"


def test_cpu_seconds_reads_a_process_and_is_none_once_it_is_gone():
    p = subprocess.Popen([sys.executable, "-c", BUSY.format(s=0.3) + "time.sleep(30)"])
    try:
        deadline = time.monotonic() + 30
        while (helper_cpu.cpu_seconds(f"/proc/{p.pid}/stat") or 0) < 0.3:
            assert time.monotonic() < deadline, "the busy process never showed its CPU"
            time.sleep(0.05)
    finally:
        p.kill()
        p.wait()
    assert helper_cpu.cpu_seconds(f"/proc/{p.pid}/stat") is None


def test_interpolation_and_the_bound():
    samples = [(10.0, 1.0), (11.0, 2.0), (13.0, 2.0)]
    assert helper_cpu.interpolate(samples, 10.5) == 1.5
    assert helper_cpu.interpolate(samples, 12.0) == 2.0
    assert helper_cpu.interpolate(samples, 9.0) == 1.0  # clamped
    assert helper_cpu.interpolate(samples, 99.0) == 2.0
    assert helper_cpu.held_speed(0.1, 10.0) == pytest.approx(0.99)
    assert helper_cpu.held_speed(20.0, 10.0) == 0.0
    with pytest.raises(ValueError, match="longer than 0 s"):
        helper_cpu.held_speed(0.1, 0.0)


def test_the_sampler_counts_the_supervisor_and_the_spares_not_itself(tmp_path):
    job, spares = tmp_path / "jobs" / "j", tmp_path / "warm"
    job.mkdir(parents=True)
    spares.mkdir()
    # the "supervisor" burns 0.5 s of CPU once the sampler has seen it; the "spare" idles
    busy = subprocess.Popen(
        [sys.executable, "-c", "import time\ntime.sleep(0.5)\n" + BUSY.format(s=0.5)]
    )
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (job / "supervisor.json").write_text(json.dumps({"pid": busy.pid}))
        (spares / f"{idle.pid}.json").write_text(json.dumps({"pid": idle.pid}))
        (spares / "torn.json").write_text("{")  # a record being written: skipped
        with helper_cpu.Sampler(job, spares, period=0.02) as sampler:
            start = time.time()
            # its wake-ups wait for a free core: it never preempts what it measures
            tid = sampler._thread.native_id
            assert tid is not None and os.sched_getscheduler(tid) == os.SCHED_BATCH
            busy.wait(60)
            time.sleep(0.1)
            end = time.time()
        used = sampler.helper_cpu(start, end)
        # the busy process's 0.5 s as the supervisor's; the idle spare's next to
        # nothing; this process's threads (the test's wait) little, and the sampler's
        # own polling not at all
        assert 0.45 <= used["supervisor"] < 0.8, used
        assert used["spares"] < 0.1 and used["notebook"] < 0.2, used
        assert sampler.helper_cpu(start, start) == dict.fromkeys(helper_cpu.KINDS, 0.0)
    finally:
        for p in (busy, idle):
            p.kill()
            p.wait()


def test_the_sampler_needs_samples_before_it_answers(tmp_path):
    sampler = helper_cpu.Sampler(tmp_path / "nojob", tmp_path / "nowarm")
    with pytest.raises(RuntimeError, match="fewer than 2 samples"):
        sampler.helper_cpu(0.0, 1.0)
