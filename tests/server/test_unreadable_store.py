"""An unreadable job directory is said in words: `GET /jobs` names it in
``unavailable`` instead of answering an empty list as if no job had run."""

from __future__ import annotations

from .conftest import get_json


def _break_store(data_dir):
    # the test runs as root, which reads any mode: a file where the directory belongs
    # is unreadable as a directory for everyone
    (data_dir / "jobs").write_text("not a directory\n", encoding="utf-8")


def test_the_manager_names_the_unreadable_store(data_dir):
    from jupyter_ddl.manager import JobManager

    _break_store(data_dir)
    manager = JobManager()
    try:
        listing = manager.listing()
    finally:
        manager.close()
    assert listing.jobs == []
    [local] = [u for u in listing.unavailable if u.backend == "local"]
    assert local.error == "BackendUnavailable"
    assert local.line.startswith(f"local: the job directory {data_dir / 'jobs'} cannot be read")
    assert "JUPYTER_DDL_DATA_DIR" in local.line


async def test_get_jobs_reports_the_unreadable_store(jp_fetch, ddl_app, data_dir):
    _break_store(data_dir)
    reply = await get_json(jp_fetch, "jupyter-ddl", "jobs")
    assert reply["jobs"] == []
    lines = [u["message"] for u in reply["unavailable"] if u["backend"] == "local"]
    assert len(lines) == 1 and "cannot be read (Not a directory)" in lines[0], reply
