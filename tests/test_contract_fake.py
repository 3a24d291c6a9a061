"""The shared backend contract, run against the tests' in-memory FakeBackend (so the
fake the notebook and server tests use behaves like the real backends)."""

from __future__ import annotations

import pytest

from tests.backend_contract import *  # noqa: F403 - collects the contract tests
from tests.support.fake_backend import FakeBackend


@pytest.fixture
def backend():
    b = FakeBackend(run_code=True)
    yield b
    b.close()


@pytest.fixture
def contract_timeout() -> float:
    return 10.0
