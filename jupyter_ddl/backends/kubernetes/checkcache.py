"""A submit's pre-flight at the floor: checks side by side, and what the last submit
learnt kept for the next.

Each pre-flight check is a round trip to the API server; one after another they cost
a dozen round trips before anything is created (on a cluster 50 ms away, more than
half a second). ``parallel`` runs independent ones on a small thread pool (the
client's connection pool is thread-safe) and raises the error the same checks run
one after another would have raised first, so what the user reads does not depend on
which answer came back first.

``CheckCache`` keeps, per backend (one cluster, one identity):

- discovery (which versions of a group serve a resource), and the Trainer release the
  cluster runs: they change only when an operator is installed or upgraded, never
  between two cells; a create answered 404 (the CRD went) forgets them;
- access reviews that were *allowed*, for ``kube_access_cache_seconds`` (a Role can be
  taken away; a refusal is never kept, so a Role granted since is seen at once). A
  create refused with a 403 despite a kept review forgets every review of that
  namespace, and the refusal is reported as the API server worded it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
Check = tuple[str, str, str, str]  # (verb, group, resource, subresource) of an access review
WORKERS = 12  # a submit runs 5 checks at once, one of them up to 6 access reviews


class CheckCache:
    """What cannot change between two submits (see the module's docstring)."""

    def __init__(self, access_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not 0 <= access_seconds <= 86400:
            raise ValueError(f"access_seconds must be 0–86400, not {access_seconds}")
        self.access_seconds, self.clock = access_seconds, clock
        self._lock = threading.Lock()
        self._served: dict[tuple[str, str], list[str]] = {}
        self._release: Any = None  # runtimes.Found
        self._allowed: dict[tuple[str, Check], float] = {}  # (namespace, check) -> until
        self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="ddl-preflight")

    # -- discovery and the Trainer release ----------------------------------------------
    def served(self, group: str, plural: str, ask: Callable[[], list[str]]) -> list[str]:
        """The versions of ``group`` serving ``plural``: kept once read (an empty
        answer is not kept: the operator may be being installed)."""
        with self._lock:
            known = self._served.get((group, plural))
        if known is not None:
            return list(known)
        got = ask()
        if got:
            with self._lock:
                self._served[(group, plural)] = list(got)
        return got

    def release(self, ask: Callable[[], Any]) -> Any:
        """The cluster's Trainer release (a ``runtimes.Found``); an assumed one is not kept."""
        with self._lock:
            if self._release is not None:
                return self._release
        found = ask()
        if getattr(found, "sure", False):
            with self._lock:
                self._release = found
        return found

    def forget_cluster(self) -> None:
        """Discovery and the release: an operator changed under us."""
        with self._lock:
            self._served.clear()
            self._release = None

    # -- access reviews ------------------------------------------------------------------
    def unchecked(self, namespace: str, checks: Sequence[Check]) -> list[Check]:
        """The checks with no allowed review kept for ``namespace``."""
        now = self.clock()
        with self._lock:
            return [c for c in checks if self._allowed.get((namespace, c), 0.0) <= now]

    def allow(self, namespace: str, checks: Sequence[Check]) -> None:
        if self.access_seconds <= 0:
            return
        until = self.clock() + self.access_seconds
        with self._lock:
            for c in checks:
                self._allowed[(namespace, c)] = until

    def forget_access(self, namespace: str) -> None:
        with self._lock:
            for key in [k for k in self._allowed if k[0] == namespace]:
                del self._allowed[key]

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def parallel(pool: ThreadPoolExecutor | None, calls: Sequence[Callable[[], T]]) -> list[T]:
    """Run ``calls`` side by side; their results in order, or the first call's error
    (in ``calls`` order) once all have ended. Without a pool, one after another."""
    if pool is None or len(calls) < 2:
        return [c() for c in calls]
    futures = [pool.submit(c) for c in calls]
    errors = [f.exception() for f in futures]  # waits for every call
    for e in errors:
        if e is not None:
            raise e
    return [f.result() for f in futures]
