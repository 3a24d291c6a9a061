"""The end of a replica's run: shipped beside ``ddl_runtime.py``, standard library only.

After the cell, the distributed runtimes it left open are ended: the torch process
group after a last barrier, MPI through ``Finalize``. Both wait for every peer, and a
peer that hangs would keep a replica that finished its work waiting forever with
nothing in its log, while the job shows Running. So the wait has a limit
(``JUPYTER_DDL_TEARDOWN_TIMEOUT`` seconds, ``DEFAULT_TEARDOWN_TIMEOUT`` without it):
after ``NOTICE_AFTER`` s the log says the cell finished and who is waiting, after the
limit that the replica leaves without its peers. A failure is never hidden.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

TEARDOWN_ENV = "JUPYTER_DDL_TEARDOWN_TIMEOUT"
DEFAULT_TEARDOWN_TIMEOUT = 300.0
NOTICE_AFTER = 1.0
#: the start of the "finished, waiting" line; the local supervisor reads it to explain
#: a stalled job
CELL_DONE_MARKER = "jupyter-ddl: the cell finished"


def teardown_timeout(env: dict[str, str]) -> float:
    """``JUPYTER_DDL_TEARDOWN_TIMEOUT`` seconds (a positive number), else the default."""
    try:
        value = float(env.get(TEARDOWN_ENV, ""))
    except ValueError:
        return DEFAULT_TEARDOWN_TIMEOUT
    return value if value > 0 else DEFAULT_TEARDOWN_TIMEOUT


def wait_for_peers(end: Callable[[], Any], timeout: float, who: str) -> bool:
    """Run ``end`` (a collective every rank must reach) for at most ``timeout`` seconds;
    False when it gave up, ``end``'s own error raised."""
    done, failed = threading.Event(), []

    def run() -> None:
        try:
            end()
        except BaseException as e:  # noqa: BLE001 - handed to the caller below
            failed.append(e)
        finally:
            done.set()

    threading.Thread(target=run, name="ddl-teardown", daemon=True).start()
    if not done.wait(min(NOTICE_AFTER, timeout)):
        print(f"{CELL_DONE_MARKER} on {who}; waiting up to {timeout:g} s for the other ranks",
              flush=True)  # fmt: skip
        if not done.wait(max(0.0, timeout - NOTICE_AFTER)):
            print(
                f"jupyter-ddl: {who} waited {timeout:g} s after the cell for the other ranks, "
                "which did not arrive (one of them hangs or is far behind); exiting without them",
                file=sys.stderr,
                flush=True,
            )
            return False
    if failed:
        raise failed[0]
    return True


def teardown(ok: bool, torch_part: Callable[[], Any]) -> None:
    """End the distributed runtimes the cell left open (``torch_part()``: the shipped
    ``ddl_runtime_torch`` module)."""
    timeout = teardown_timeout(dict(os.environ))
    dist = sys.modules.get("torch.distributed")
    if dist is not None:
        try:
            torch_part().teardown_torch(
                dist, ok, lambda end, who: wait_for_peers(end, timeout, who)
            )
        except Exception as e:  # noqa: BLE001 - teardown must not replace the real result
            print(f"jupyter-ddl: process group teardown: {e}", file=sys.stderr)
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None:
        try:
            if mpi.Is_initialized() and not mpi.Is_finalized():
                if ok:
                    wait_for_peers(mpi.Finalize, timeout, f"rank {mpi.COMM_WORLD.Get_rank()}")
                elif mpi.COMM_WORLD.Get_size() > 1:
                    mpi.COMM_WORLD.Abort(1)  # peers would wait forever in a collective
        except Exception as e:  # noqa: BLE001
            print(f"jupyter-ddl: MPI teardown: {e}", file=sys.stderr)
