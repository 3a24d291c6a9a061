"""Every error a user can meet is declared in jupyter_ddl/errors.py and carries the
HTTP status the REST layer answers with."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import jupyter_ddl
from jupyter_ddl import errors
from jupyter_ddl.errors import JobFailed, ShownError, ValidationError

ROOT = Path(jupyter_ddl.__file__).parent


def _error_classes() -> list[type]:
    return [
        c for _, c in inspect.getmembers(errors, inspect.isclass) if c.__module__ == errors.__name__
    ]


def test_every_error_has_an_http_status():
    for cls in _error_classes():
        if cls is ShownError:  # its status is the wrapped error's (below)
            continue
        assert isinstance(cls.http_status, int) and 400 <= cls.http_status < 600, cls
    assert ShownError(ValidationError("x")).http_status == 400
    assert ShownError(JobFailed("x")).http_status == JobFailed.http_status == 409


def test_no_error_class_of_ours_lives_outside_errors_py():
    """A class deriving from one of errors.py's classes, anywhere else, is a second
    home for errors (the REST layer and the magics would not know its status)."""
    ours = {c.__name__ for c in _error_classes()}
    outside = []
    for path in ROOT.rglob("*.py"):
        if path.name == "errors.py" and path.parent == ROOT:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases}
                # ours, or any exception at all (runtime/ ships into images alone: it
                # may use only the stdlib, so its few errors stay there)
                exception = any(b.endswith(("Error", "Exception")) for b in bases)
                if bases & ours or (exception and "runtime" not in path.parts):
                    outside.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert outside == []


def test_job_failed_names_the_replica_whose_lines_to_read():
    class Root:
        replica = "worker-1"

    e = JobFailed.of("j", "worker-1 exited with code 1", Root())
    assert str(e) == (
        "job j failed: worker-1 exited with code 1; "
        "`%ddl logs j --replica worker-1` shows every line"
    )
    assert "a replica failed" in str(JobFailed.of("j", None))
