"""The pure parts of the fault handling: the replica's environment, the stall note,
the runtime's bounded teardown, Open MPI 5 tags, the process limit."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from jupyter_ddl.backends.local import launch
from jupyter_ddl.backends.local.control import check_process_limit, process_count
from jupyter_ddl.backends.local.mpi_output import MpiDemux, tag_space
from jupyter_ddl.backends.local.stall import Quiet, stall_message
from jupyter_ddl.core import contract
from jupyter_ddl.errors import ResourceError
from jupyter_ddl.models import JobSpec
from jupyter_ddl.runtime import ddl_runtime_end as ddl_runtime


def test_a_replica_keeps_the_base_set_and_what_was_named():
    kernel = {
        "PATH": "/bin", "HOME": "/root", "LANG": "C.UTF-8", "LC_ALL": "C", "TMPDIR": "/t",
        "VIRTUAL_ENV": "/v", "PYTHONPATH": "/p", "OMP_NUM_THREADS": "2", "NCCL_DEBUG": "INFO",
        "https_proxy": "http://proxy:3128", "CUDA_HOME": "/cuda",
        "AWS_SECRET_ACCESS_KEY": "aws", "GITHUB_TOKEN": "gh", "WANDB_MODE": "offline",
        "MY_SECRET": "s", "TF_CONFIG": "{}", "OMPI_COMM_WORLD_RANK": "3", "RANK": "1",
    }  # fmt: skip
    env = launch.inherited_env(kernel, passthrough=["WANDB_MODE", "RANK"], secrets=["MY_SECRET"])
    assert env == {
        "PATH": "/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "TMPDIR": "/t",
        "VIRTUAL_ENV": "/v",
        "PYTHONPATH": "/p",
        "OMP_NUM_THREADS": "2",
        "NCCL_DEBUG": "INFO",
        "https_proxy": "http://proxy:3128",
        "CUDA_HOME": "/cuda",
        "WANDB_MODE": "offline",
        "MY_SECRET": "s",
    }  # fmt: skip  (RANK places a process in a job: never passed, even when named)


def test_plan_marks_every_replica_and_passes_the_teardown_limit():
    spec = JobSpec(name="j", strategy="torch-ddp", replicas={"Master": 1, "Worker": 1})
    eps = contract.local_endpoints(spec, [1, 2])
    plans = launch.plan(
        spec, python="py", entry="m.py", hostfile="h", endpoints=eps, gpus={},
        environ={"HOME": "/h", "TOKEN": "t"}, marker=("JUPYTER_DDL_JOB_DIR", "/d/j"),
        teardown_timeout=30.0,
    )  # fmt: skip
    for p in plans:
        assert (
            p.env["JUPYTER_DDL_JOB_DIR"] == "/d/j" and p.env["JUPYTER_DDL_TEARDOWN_TIMEOUT"] == "30"
        )
        assert "TOKEN" not in p.env and p.env["HOME"] == "/h"


def test_stall_note_names_who_finished_and_who_is_silent():
    t0 = 1_000_000.0
    quiet = [Quiet("master-0", t0 + 10, t0 + 9), Quiet("worker-0", t0 + 2, None)]
    assert stall_message(quiet, t0 + 69, since=t0, after=60) is None  # 59 s: not yet
    note = stall_message(quiet, t0 + 70, since=t0, after=60)
    clock = time.strftime("%H:%M:%S", time.localtime(t0 + 9))
    assert note == f"stalled: master-0 finished at {clock}, worker-0 silent for 68 s"
    assert stall_message(quiet, t0 + 70, since=t0 + 30, after=60) is None  # CPU moved at +30
    assert stall_message(quiet, t0 + 999, since=t0, after=0) is None  # off


def test_teardown_waits_for_peers_at_most_the_limit(capsys):
    assert ddl_runtime.wait_for_peers(lambda: None, 5, "rank 0") is True
    assert capsys.readouterr().out == ""  # a quick end says nothing
    never = threading.Event()
    start = time.monotonic()
    assert ddl_runtime.wait_for_peers(never.wait, 1.5, "rank 0") is False
    assert 1.4 < time.monotonic() - start < 5
    out = capsys.readouterr()
    assert out.out.startswith(f"{ddl_runtime.CELL_DONE_MARKER} on rank 0; waiting up to 1.5 s")
    assert "rank 0 waited 1.5 s after the cell for the other ranks" in out.err
    with pytest.raises(RuntimeError, match="peer closed"):
        ddl_runtime.wait_for_peers(lambda: (_ for _ in ()).throw(RuntimeError("peer closed")), 5, "r")  # fmt: skip
    assert ddl_runtime.teardown_timeout({"JUPYTER_DDL_TEARDOWN_TIMEOUT": "12"}) == 12
    for bad in ("", "-1", "soon", "0"):
        env = {"JUPYTER_DDL_TEARDOWN_TIMEOUT": bad}
        assert ddl_runtime.teardown_timeout(env) == ddl_runtime.DEFAULT_TEARDOWN_TIMEOUT


def test_the_supervisor_reads_the_runtimes_marker():
    from jupyter_ddl.backends.local import launch, replica

    assert replica.CELL_DONE_MARKER is ddl_runtime.CELL_DONE_MARKER
    assert launch.TEARDOWN_ENV == ddl_runtime.TEARDOWN_ENV


def test_open_mpi_5_tags_lose_their_space_and_4_keeps_leading_spaces():
    five = MpiDemux(space=True)
    assert five.feed("[1,0]<stdout>: hello") == ("", [(0, "stdout", "hello")])
    assert five.feed("[1,1]<stdout>:   indented") == ("", [(1, "stdout", "  indented")])
    assert five.feed("[1,0]<stdout>: part [1,1]<stdout>: other") == ("", [(1, "stdout", "other")])
    assert five.feed("[1,0]<stdout>: two") == ("", [(0, "stdout", "part two")])
    assert five.feed("[prterun-host-42@1,2]<stderr>: x") == ("", [(2, "stderr", "x")])
    four = MpiDemux()
    assert four.feed("[1,0]<stdout>: indented") == ("", [(0, "stdout", " indented")])
    assert tag_space("mpirun (Open MPI) 5.0.8\n\nReport bugs to https://www.open-mpi.org/")
    assert not tag_space("mpirun (Open MPI) 4.1.4\n")
    assert not tag_space("something else")


def test_process_count_and_limit():
    ddp = JobSpec(name="d", strategy="torch-ddp", replicas={"Master": 1, "Worker": 3})
    assert process_count(ddp.shape) == 4
    ddp = replace(ddp, nproc_per_node=2)
    assert process_count(ddp.shape) == 8
    mpi = JobSpec(name="m", strategy="horovod", replicas={"Launcher": 1, "Worker": 2})
    mpi = replace(mpi, slots_per_worker=4)
    assert process_count(mpi.shape) == 8  # mpirun's ranks
    check_process_limit(ddp, 8)
    with pytest.raises(ResourceError, match=r"Master 1 \+ Worker 3 × 2 processes each is 8"):
        check_process_limit(ddp, 7)


def test_a_log_path_is_only_ever_a_replica_id(tmp_path):
    from jupyter_ddl.backends.local.jobdir import JobDir

    jd = JobDir(tmp_path / "job")
    assert jd.log_path("worker-12") == tmp_path / "job" / "logs" / "worker-12.log"
    for bad in ("../x", "worker-0/../../x", "/etc/passwd", "Worker-0", "worker-", ""):
        with pytest.raises(ValueError):
            jd.log_path(bad)
