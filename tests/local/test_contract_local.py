"""The shared backend contract, run against the local backend."""

from tests.backend_contract import *  # noqa: F403
