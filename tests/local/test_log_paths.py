"""The local log path's fast parts: stamps, bounded reads, event building,
the metric pre-filter, pacing, and one real job streamed end to end."""

from __future__ import annotations

import random
import threading
from datetime import datetime, timezone

import pytest

from jupyter_ddl._util.timestamps import parse as parse_stamp
from jupyter_ddl.backends.local.jobdir import (
    JobDir,
    format_log_line,
    parse_log_line,
    parse_log_lines,
)
from jupyter_ddl.backends.local.logs import (
    READ_BUDGET,
    LogEvents,
    LogFollower,
    Pacer,
    count_lines,
    iter_logs,
)
from jupyter_ddl.core.metrics import _CANDIDATE, KNOWN, parse_metric_line
from jupyter_ddl.models import EventKind, JobEvent, JobState, LogLine

from .conftest import submit, wait


def _strftime(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _strptime(stamp: str) -> float:
    t = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
    return t.replace(tzinfo=timezone.utc).timestamp()


def test_cached_stamps_match_datetime_exactly():
    rng = random.Random(9)
    times = [rng.uniform(0, 4e9) for _ in range(3000)]
    times += [1795300000 + i / 7 for i in range(3000)]  # many lines within one second
    times += [1795300000.9999995, 1795300059.9999996, 0.0, 1.5e-7]  # rounding carries
    for t in times:
        line = format_log_line(t, "stdout", "x")
        assert line == f"{_strftime(t)} stdout x\n"
        stamp = line.split(" ", 1)[0]
        assert parse_stamp(stamp) == _strptime(stamp)  # to the bit, not approximately


@pytest.mark.parametrize(
    "stamp",
    [
        "2026-11-21T23:40:60.123456Z",  # no second 60
        "2026-13-21T23:40:01.123456Z",
        "2026-11-21T23:4x:01.123456Z",
        "2026-11-21T23:40:01.12345²Z",  # a digit, but not an ASCII one
        "2026-11-21T23:40:01.123456X",
        "x" * 26 + "Z",
    ],
)
def test_malformed_stamps_are_not_times(stamp):
    assert parse_stamp(stamp) is None
    assert parse_log_line(f"{stamp} stdout hi") == (None, "stdout", f"{stamp} stdout hi")


def test_batch_parse_equals_line_by_line():
    rng = random.Random(4)
    raws, t = [], 1795300000.0
    for _ in range(5000):
        t += rng.choice([0.0001, 0.01, 0.4, 1.7])
        line = format_log_line(t, rng.choice(["stdout", "stderr"]), rng.choice(["", "a  b", "é"]))
        kind = rng.random()
        if kind < 0.1:
            line = "foreign line"
        elif kind < 0.2:
            line = line[:22] + "+1" + line[24:]  # not a stamp: int() would take "+1"
        elif kind < 0.3:
            line = line.rstrip("\n").rstrip(" ")  # stamp and stream, no text
        raws.append(line.rstrip("\n"))
    assert parse_log_lines(raws) == [parse_log_line(r) for r in raws]


def test_short_fraction_takes_the_slow_path():
    assert parse_stamp("2026-11-21T23:40:01.12Z") == _strptime("2026-11-21T23:40:01.12Z")


def _write_log(path, texts):
    with open(path, "w", encoding="utf-8") as f:
        for i, text in enumerate(texts):
            f.write(format_log_line(1795300000 + i / 1000, "stdout", text))


def test_poll_reads_at_most_its_budget_and_loses_nothing(tmp_path):
    path = tmp_path / "worker-0.log"
    texts = [f"line {i}" for i in range(3000)]
    _write_log(path, texts)
    f = LogFollower("worker-0", path, budget=4096)
    first = f.poll()
    assert first and f.behind
    assert sum(len(format_log_line(0, "stdout", x.text)) for x in first) <= 4096
    got = list(first)
    while f.behind:
        got += f.poll()
    assert [x.text for x in got] == texts
    assert [x.offset for x in got] == list(range(3000))
    assert f.poll() == [] and not f.behind


def test_offset_skips_across_polls(tmp_path):
    path = tmp_path / "w.log"
    _write_log(path, [f"l{i}" for i in range(500)])
    f = LogFollower("w", path, offset=321, budget=1000)
    got = [x for _ in range(100) for x in f.poll()]
    assert [x.offset for x in got] == list(range(321, 500))
    assert got[0].text == "l321"


def test_a_line_longer_than_the_budget_comes_whole(tmp_path):
    path = tmp_path / "w.log"
    long = "y" * 10_000
    _write_log(path, ["a", long, "b"])
    f = LogFollower("w", path, budget=512)
    got = [x.text for _ in range(10) for x in f.poll()]
    assert got == ["a", long, "b"]


def test_half_written_line_waits_for_its_newline(tmp_path):
    path = tmp_path / "w.log"
    _write_log(path, ["done"])
    with open(path, "a", encoding="utf-8") as out:
        out.write(format_log_line(1.0, "stderr", "half").rstrip("\n"))
    f = LogFollower("w", path)
    assert [x.text for x in f.poll()] == ["done"]
    with open(path, "a", encoding="utf-8") as out:
        out.write("\n")
    (line,) = f.poll()
    assert (line.text, line.stream, line.offset) == ("half", "stderr", 1)


def test_form_feeds_and_line_separators_do_not_shift_offsets(tmp_path):
    path = tmp_path / "w.log"
    texts = ["page\x0cbreak", "para\u2028sep", "after"]
    _write_log(path, texts)
    got = LogFollower("w", path).poll()
    assert [x.text for x in got] == texts
    assert len(got) == count_lines(path)


def test_iter_logs_reads_past_many_budgets(tmp_path):
    jd = JobDir(tmp_path / "job")
    jd.logs_dir.mkdir(parents=True)
    texts = [f"line {i} " + "z" * 60 for i in range(4 * READ_BUDGET // 80)]
    _write_log(jd.log_path("worker-0"), texts)
    _write_log(jd.log_path("worker-1"), texts[:3])
    got = list(iter_logs(jd))
    assert [x.text for x in got if x.replica == "worker-0"] == texts
    assert [x.text for x in got if x.replica == "worker-1"] == texts[:3]
    followed = list(iter_logs(jd, replica="worker-0", offset=10, follow=True))
    assert [x.offset for x in followed] == list(range(10, len(texts)))
    # an offset past the first budget: that poll yields nothing, yet reading goes on
    late = len(texts) - 5
    assert [x.offset for x in iter_logs(jd, replica="worker-0", offset=late)] == list(
        range(late, len(texts))
    )
    assert [x.offset for x in iter_logs(jd, replica="worker-0", tail=2)] == [
        len(texts) - 2,
        len(texts) - 1,
    ]


def test_log_events_equal_regular_job_events():
    line = LogLine("worker-1", 7, "hello", 1795300000.5, "stderr")
    built = LogEvents("job-a")(line, 1795300001.25)
    regular = JobEvent(EventKind.LOG, "job-a", 1795300001.25, "worker-1", log=line)
    assert built == regular
    assert hash(built) == hash(regular)
    assert built.to_dict() == regular.to_dict()
    with pytest.raises(AttributeError):
        built.job = "other"  # type: ignore[misc]  # still frozen


def test_metric_prefilter_admits_every_known_name():
    for name in KNOWN:
        assert _CANDIDATE.search(name), name
        for line in (f"{name}=0.5", f"step 3 {name.upper()}: 0.5", f"train/{name}=1"):
            m = parse_metric_line(line)
            want = 1.0 if line.startswith("train/") else 0.5
            assert m is not None and list(m.values.values()) == [want], line
    assert parse_metric_line("val_top9=2")  # any val_/train_/test_ key
    assert parse_metric_line("bench 3 1234 1795300000.123456") is None
    assert parse_metric_line("step=3 port=22") is None  # pairs, but none a metric


def test_pacer_reads_on_at_once_when_behind_and_backs_off_when_idle():
    p = Pacer(idle=0.2, busy=0.03)
    assert p.next(got=True, behind=True) == 0.0
    assert p.next(got=True, behind=False) == 0.03
    idle = [p.next(got=False, behind=False) for _ in range(10)]
    assert idle == sorted(idle) and idle[-1] == 0.2
    assert p.next(got=True, behind=False) == 0.03


def test_watch_streams_every_line_in_order_before_the_end(backend):
    # 3 replicas × 4000 lines, as fast as print goes: far beyond one poll's budget
    code = "for i in range(4000):\n    print(f'n {i} step={i} loss={i / 10}')\n"
    name = submit(backend, code, "torch-ddp", {"Master": 1, "Worker": 2})
    seen: dict[str, list[int]] = {}
    metrics = 0
    stop = threading.Event()
    timer = threading.Timer(150, stop.set)  # a hang fails below instead of blocking
    timer.start()
    try:
        events = list(backend.watch(name, stop=stop))
    finally:
        timer.cancel()
    assert wait(backend, name, timeout=5).state == JobState.SUCCEEDED
    for e in events:
        if e.kind == EventKind.LOG and e.log.text.startswith("n "):
            seen.setdefault(e.log.replica, []).append(int(e.log.text.split()[1]))
        metrics += e.kind == EventKind.METRIC
    assert sorted(seen) == ["master-0", "worker-0", "worker-1"]
    assert all(numbers == list(range(4000)) for numbers in seen.values())
    assert metrics == 3 * 4000
    last = events[-1]
    assert last.kind == EventKind.STATUS and last.status.state == JobState.SUCCEEDED
