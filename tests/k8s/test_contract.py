"""The shared backend contract, run against the Kubernetes backend and the API double."""

from __future__ import annotations

import pytest

from tests.backend_contract import *  # noqa: F403 - collects the contract tests
from tests.backend_contract import default_make_job


@pytest.fixture
def make_job():
    return default_make_job


@pytest.fixture
def contract_timeout() -> float:
    return 30.0
