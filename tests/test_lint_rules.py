"""The lint promises hold: a bare ``except Exception:`` without a reason fails, a noqa
that silences nothing fails, and the public API's functions need docstrings (private
modules and tests do not)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SWALLOW = "def f() -> None:\n    try:\n        g()\n    except Exception:\n        return\n"
STALE = "x = 1  # noqa: E731\n"
UNDOCUMENTED = "def shown() -> None:\n    return None\n"


def ruff(source: str, as_path: str) -> str:
    """The rule codes ruff reports for ``source`` as if it were the file ``as_path``."""
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
         "--stdin-filename", as_path, "-"],
        input=source, capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    if out.returncode not in (0, 1):
        pytest.fail(f"ruff failed: {out.stderr.strip()}")
    return out.stdout


def test_a_swallowed_exception_needs_a_reason():
    assert "BLE001" in ruff(SWALLOW, "jupyter_ddl/core/x.py")
    reasoned = SWALLOW.replace("except Exception:", "except Exception:  # noqa: BLE001 - why")
    assert "BLE001" not in ruff(reasoned, "jupyter_ddl/core/x.py")


def test_a_noqa_that_silences_nothing_fails():
    assert "RUF100" in ruff(STALE, "jupyter_ddl/core/x.py")


@pytest.mark.parametrize("module", ["__init__", "manager", "models", "errors", "config"])
def test_the_public_api_needs_docstrings(module):
    assert "D103" in ruff(UNDOCUMENTED, f"jupyter_ddl/{module}.py")


@pytest.mark.parametrize("path", ["jupyter_ddl/core/x.py", "tests/test_x.py"])
def test_private_modules_and_tests_need_none(path):
    assert "D1" not in ruff(UNDOCUMENTED, path)
