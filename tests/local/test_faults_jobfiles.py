"""Any malformed job file (fuzzed): that job lists as unreadable, every other job as
it is, and no surface raises. One real finished job is the template; each example
writes a mangled copy of one of its files into a second job directory."""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_ddl.backends.local import LocalBackend
from jupyter_ddl.models import JobState
from jupyter_ddl.present.text import header_text
from tests.local.conftest import submit, wait

pytestmark = pytest.mark.timeout(300)

FILES = ("status.json", "spec.json", "handle.json")
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    import os

    data = tmp_path_factory.mktemp("ddl-data")
    old = os.environ.get("JUPYTER_DDL_DATA_DIR")
    os.environ["JUPYTER_DDL_DATA_DIR"] = str(data)
    try:
        backend = LocalBackend()
        good = submit(backend, "print('hi')\n", "torch-ddp", {"Master": 1, "Worker": 1})
        assert wait(backend, good, timeout=120).state == JobState.SUCCEEDED
        yield backend, good
    finally:
        if old is None:
            os.environ.pop("JUPYTER_DDL_DATA_DIR", None)
        else:
            os.environ["JUPYTER_DDL_DATA_DIR"] = old


@st.composite
def mangled(draw):
    """(file, new text): a field of the file replaced, the file replaced by any JSON,
    or cut short."""
    file = draw(st.sampled_from(FILES))
    how = draw(st.sampled_from(["field", "whole", "cut"]))
    return file, how, draw(JSON), draw(st.integers(0, 400))


def _text(original: str, how: str, value, cut: int) -> str:
    if how == "cut":
        return original[:cut]
    if how == "whole":
        return json.dumps(value)
    data = json.loads(original)
    keys = sorted(data)
    data[keys[cut % len(keys)]] = value
    if isinstance(data.get("replicas"), list) and data["replicas"] and cut % 3 == 0:
        data["replicas"][0] = value  # inside a nested record too
    return json.dumps(data)


@settings(
    max_examples=150, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip
@given(change=mangled())
def test_a_mangled_job_file_hides_no_other_job(template, change):
    backend, good = template
    file, how, value, cut = change
    src = backend.job_dir(good)
    bad_dir = src.parent / "mangled"
    shutil.rmtree(bad_dir, ignore_errors=True)
    shutil.copytree(src, bad_dir, symlinks=True)
    for name in FILES:  # the copy is a job of its own name
        data = json.loads((bad_dir / name).read_text())
        data["name"] = "mangled"
        (bad_dir / name).write_text(json.dumps(data))
    original = (bad_dir / file).read_text()
    (bad_dir / file).write_text(_text(original, how, value, cut))
    try:
        fresh = LocalBackend()  # nothing cached from an earlier example
        listed = {s.name: s for s in fresh.list()}
        assert listed[good].state == JobState.SUCCEEDED and not listed[good].message
        assert "mangled" in listed
        shown = fresh.get("mangled")
        header_text_of(shown)
        if shown.message and "unreadable" in shown.message:
            assert file in shown.message or "a job file" in shown.message
    finally:
        shutil.rmtree(bad_dir, ignore_errors=True)


def header_text_of(status) -> str:
    from jupyter_ddl.present.state import DashboardState

    return header_text(DashboardState.of_status(status))


def test_gang_and_queue_are_refused_on_the_local_backend(template):
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.errors import ValidationError
    from jupyter_ddl.models import GangScheduling, JobSpec

    backend, _ = template
    spec = JobSpec(
        name="queued", strategy="torch-ddp", replicas={"Master": 1}, gang=GangScheduling(queue="q1")
    )
    with pytest.raises(ValidationError, match="local backend .* has no scheduler queue"):
        backend.submit(spec, build_bundle("x = 1"))
    assert "queued" not in {s.name for s in backend.list()}


def test_a_job_deleted_while_followed_is_reported_deleted(template):
    import threading

    from jupyter_ddl.errors import JobNotFound

    backend, _ = template
    name = submit(backend, "import time\nprint('up', flush=True)\ntime.sleep(120)\n", "torch-ddp", {"Master": 1})  # fmt: skip
    seen: list[BaseException | None] = []

    def follow():
        try:
            for _ in backend.watch(name):
                pass
            seen.append(None)
        except BaseException as e:  # noqa: BLE001 - what the follower would show
            seen.append(e)

    t = threading.Thread(target=follow, daemon=True)
    t.start()
    import time

    time.sleep(2)
    LocalBackend().delete(name)  # another process's view of the same jobs
    t.join(60)
    assert seen, "the follower never ended"
    # the delete stops the job before its files go: the follower either sees it end, or
    # (its files gone first) is told it was deleted; never "unreadable spec.json"
    assert seen[0] is None or isinstance(seen[0], JobNotFound), seen
    if seen[0] is not None:
        assert "was deleted" in str(seen[0]) and "unreadable" not in str(seen[0])
