"""The root-cause classifier over the log tails of real failing jobs.

tests/data/failures/*.json were collected from real runs on the local backend by
tests/data/failures/collect.py (gloo peers losing a crashed rank, a SIGKILLed rank, a
rank that exits without a traceback, torchrun wrapping its child's error, MultiWorker-
Mirrored, an MPI rank, a cancel's teardown). NCCL cannot run here: its cases use the
messages ProcessGroupNCCL and NCCL print (torch/csrc/distributed/c10d), in the layout
torch's logging gives them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jupyter_ddl.core import failures
from jupyter_ddl.core.failures import ReplicaOutcome, diagnose
from jupyter_ddl.models import EventKind, JobEvent, LogLine
from jupyter_ddl.present.state import DashboardState

DATA = Path(__file__).parents[1] / "data" / "failures"


def outcomes(case: str, *, status_tail: bool = False) -> list[ReplicaOutcome]:
    data = json.loads((DATA / f"{case}.json").read_text())
    out = []
    for i, r in enumerate(data["replicas"]):
        lines = r["lines"]
        if status_tail:  # what a replica's status carries (the local supervisor's choice)
            lines = failures.status_tail(r["id"], lines, r["state"] != "Succeeded")
        out.append(
            ReplicaOutcome(
                id=r["id"], state=r["state"], rank=r["rank"], ended=r["ended"], lines=lines,
                exit_code=r["exit_code"], signal=r["signal"], message=r["message"], order=i,
            )
        )  # fmt: skip
    return out


# case: (root replica, its rank, text in its summary, {consequence: symptom})
CASES = {
    "gloo-closed": ("worker-1", 2, "ValueError: boom", {"worker-0": "Connection closed by peer"}),
    "gloo-restarts": ("worker-0", 1, "ValueError: boom", {"master-0": "Connection closed by peer"}),
    "gloo-killed": ("worker-0", 1, "signal 9", {"master-0": "Connection closed by peer"}),
    "exit-no-traceback": ("worker-1", 2, "exit code 3", {"worker-0": "Connection closed by peer"}),
    "torchrun-child": (
        "worker-0",
        1,
        "ValueError: boom",
        {"master-0": "Connection closed by peer"},
    ),
    "tf-multi-worker": ("worker-1", 1, "ValueError: boom in the input pipeline", {}),
    "mpi-rank": ("worker-1", 1, "ValueError: boom", {"launcher-0": "a rank called MPI_ABORT"}),
}


@pytest.mark.parametrize("status_tail", [False, True], ids=["dashboard-lines", "status-lines"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_root_cause_of_real_failures(case, status_tail):
    replica, rank, summary, symptoms = CASES[case]
    found = diagnose(outcomes(case, status_tail=status_tail))
    assert found.root is not None
    assert (found.root.replica, found.root.rank) == (replica, rank), found.line
    assert summary in found.root.summary and found.root.symptom is None
    got = {c.replica: c.symptom for c in found.consequences}
    for rid, symptom in symptoms.items():
        assert got.get(rid) == symptom, found.line
    assert found.line.startswith(f"{replica} · rank {rank} failed first: ")


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_final_root_cause_names_the_consequences_the_message_named(case):
    """The job's message is composed while its replicas fail; by the final status a
    peer that lost the root is 'Terminated' (stopped by the job's end). The REST
    root_cause, the record and the job view read that final status: they name it too."""
    message = json.loads((DATA / f"{case}.json").read_text())["message"]
    _, then = message.split(" — ")[0].partition("; then ")[::2]
    named = re.findall(r"([a-z]+-\d+)(?: · rank \d+)? \(", then)
    found = diagnose(outcomes(case, status_tail=True)).to_dict()
    assert found is not None
    assert set(named) <= {c["replica"] for c in found["consequences"]}, (message, found)


def test_the_root_cause_tail_is_its_own_traceback_without_our_notes():
    found = diagnose(outcomes("gloo-restarts"))
    assert found.root is not None
    tail = found.root.tail
    assert tail[0] == "Traceback (most recent call last):" and tail[-1] == "ValueError: boom"
    assert not any("ended with" in t or "restart" in t for t in tail)


def test_torchrun_gives_way_to_the_child_that_raised():
    """torchrun prints its own ChildFailedError traceback last; the child's own one,
    printed before it, is the cause (its peer's gloo error on the same node is not)."""
    root = diagnose(outcomes("torchrun-child")).root
    assert root is not None and root.exception == "ValueError: boom"
    assert not any("ChildFailedError" in t for t in root.tail)


def test_a_cancel_is_no_failure_and_its_teardown_is_marked():
    replicas = outcomes("cancel-teardown")
    assert diagnose(replicas).root is None
    noisy = [r for r in replicas if any("Connection" in t for t in r.lines)]
    assert noisy, "the collected cancel shows peers' errors after the marker"
    for r in noisy:
        start = failures.teardown_start(r.lines)
        assert start is not None and all("Traceback" not in t for t in r.lines[:start])
        assert failures.own_lines(r.id, r.lines) == list(r.lines[: start - 1])
    # the same lines through the dashboard's state: the teardown is labelled as such
    st = DashboardState("cancel-teardown")
    for r in replicas:
        for n, text in enumerate(r.lines):
            stream = "ddl" if text.startswith(failures.CANCEL_MARKER) else "stderr"
            line = LogLine(r.id, n, text, stream=stream)
            st.apply(JobEvent(EventKind.LOG, "cancel-teardown", replica=r.id, log=line))
    from jupyter_ddl.present.text import replica_log_html, replica_log_text

    v = st.replicas[noisy[0].id]
    assert v.teardown_from is not None
    text = replica_log_text(st, v.id)
    assert "(teardown) RuntimeError" in text and "(teardown) jupyter-ddl: cancel" not in text
    html = replica_log_html(st, v.id)
    assert "ddl-teardown" in html and html.index("teardown after the cancel") < html.index(
        "Connection"
    )


# -- NCCL: messages from torch's ProcessGroupNCCL and NCCL's error strings ------------------
def _nccl_peer(rank: int) -> list[str]:
    stamp = f"[rank{rank}]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:"
    return [
        f"{stamp}629] [Rank {rank}] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) "
        "ran for 600081 milliseconds before timing out.",
        f"{stamp}681] [Rank {rank}] Some NCCL operations have failed or timed out. Due to the "
        "asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
        "corrupted/incomplete data.",
        f"{stamp}695] [Rank {rank}] To avoid data inconsistency, we are taking the entire process down.",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
    ]


def test_nccl_watchdog_peers_are_consequences_of_the_rank_that_ran_out_of_memory():
    oom = [
        "Traceback (most recent call last):",
        '  File "/opt/jupyter-ddl/code/cell.py", line 12, in <module>',
        "    out = model(batch)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.10 GiB of which 1.20 GiB is free.",
    ]
    replicas = [
        ReplicaOutcome("master-0", "Failed", 0, 1000.0, _nccl_peer(0), signal=6, order=0),
        ReplicaOutcome("worker-0", "Failed", 1, 1001.0, oom, exit_code=1, order=1),
        ReplicaOutcome("worker-1", "Failed", 2, 999.0, _nccl_peer(2), signal=6, order=2),
    ]
    found = diagnose(replicas)
    assert found.root is not None and found.root.replica == "worker-0"
    assert found.root.summary.startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert [c.replica for c in found.consequences] == ["worker-1", "master-0"]  # by time
    assert {c.symptom for c in found.consequences} == {"NCCL watchdog timeout"}


@pytest.mark.parametrize(
    "line, symptom",
    [
        ("torch.distributed.DistBackendError: NCCL communicator was aborted on rank 3. "
         "Original reason for failure was: ...", "NCCL communicator was aborted"),
        ("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or "
         "there was a network error, NCCL version 2.21.5", "NCCL remote error"),
        ("ncclRemoteError: A call failed possibly due to a network error or a remote process "
         "exiting prematurely.", "NCCL remote error"),
        ("terminate called without an active exception", "terminate called"),
        ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by "
         "peer [10.0.0.7]:51234", "Connection closed by peer"),
        ("tensorflow.python.framework.errors_impl.UnavailableError: Collective ops is aborted "
         "by: Socket closed", "TensorFlow collective aborted"),
    ],
)  # fmt: skip
def test_peer_failure_symptoms(line, symptom):
    assert failures.symptom([line]) == symptom


def test_a_torchrun_stopped_by_sigterm_gives_way_to_the_node_that_raised():
    """Seen on the real tier (Trainer v2.3, JobSet): the node whose cell raised ends a
    moment after JobSet's deletion sent the other node's torchrun SIGTERM."""
    stopped = [
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 25037 got signal: 15",
    ]
    raised = ["Traceback (most recent call last):", '  File "cell.py", line 3, in <module>',
              "ValueError: the cell is broken"]  # fmt: skip
    replicas = [
        ReplicaOutcome("node-0", "Failed", 0, 10.0, stopped, exit_code=1, order=0),
        ReplicaOutcome("node-1", "Failed", 1, 11.0, raised, exit_code=1, order=1),
    ]
    found = diagnose(replicas)
    assert found.root is not None and found.root.replica == "node-1", found.root
    assert "ValueError: the cell is broken" in found.root.summary
    assert failures.symptom(stopped) == "stopped from outside by a signal"


def test_a_lone_node_whose_restart_was_stopped_names_what_it_raised_before():
    """Seen on the real tier (TrainJob, one node, backoff limit 1): the cell raised, the
    node restarted, and JobSet's deletion sent the restarted torchrun SIGTERM before
    its cell ran: the last traceback is the signal, the cause is the run before it."""
    first_run = [
        "Traceback (most recent call last):", '  File "cell.py", line 1, in <module>',
        "ValueError: the cell is broken",
        "Traceback (most recent call last):", '  File "torchrun", line 8, in <module>',
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "cell.py FAILED",
    ]  # fmt: skip
    stopped_run = [
        "Traceback (most recent call last):", '  File "torchrun", line 8, in <module>',
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 2520 got signal: 15",
    ]  # fmt: skip
    node = ReplicaOutcome("node-0", "Failed", 0, 10.0, first_run + stopped_run, exit_code=1)
    found = diagnose([node])
    assert found.root is not None and found.root.replica == "node-0"
    assert found.root.summary.startswith("ValueError: the cell is broken"), found.root.summary
    # stopped with nothing raised before: the signal is all there is to say
    alone = ReplicaOutcome("node-0", "Failed", 0, 10.0, stopped_run, exit_code=1)
    assert "SignalException" in (diagnose([alone]).root or found.root).summary


def test_when_every_failure_reads_as_a_peers_the_first_to_fail_leads():
    replicas = [
        ReplicaOutcome("master-0", "Failed", 0, 12.0, _nccl_peer(0), signal=6, order=0),
        ReplicaOutcome("worker-0", "Failed", 1, 11.0, _nccl_peer(1), signal=6, order=1),
    ]
    found = diagnose(replicas)
    assert found.root is not None and found.root.replica == "worker-0"
    assert found.to_dict() == {
        "replica": "worker-0", "rank": 1, "summary": found.root.summary,
        "tail": found.root.tail, "consequences": [
            {"replica": "master-0", "rank": 0, "symptom": "NCCL watchdog timeout"}
        ],
    }  # fmt: skip


def test_nothing_failed_nothing_to_say():
    ok = [ReplicaOutcome("master-0", "Succeeded", 0, 1.0, ["done"], exit_code=0)]
    assert diagnose(ok).root is None and diagnose(ok).line == "" and diagnose(ok).to_dict() is None


_FRAMES = [
    "Traceback (most recent call last):",
    '  File "/opt/ddl/cell.py", line 5, in <module>',
    '    raise FileNotFoundError("data/shard-1.pt is missing")',
]


@pytest.mark.parametrize(
    ("stdout", "raised"),
    [("rank 1: reading my data shard", "FileNotFoundError: data/shard-1.pt is missing"),
     ("loss: 0.5", "FileNotFoundError: data/shard-1.pt is missing"),
     ("rank 1: reading my data shard", "mylib.ShardMissing: data/shard-1.pt"),
     ("rank 1: reading my data shard", "mylib.ShardMissing")],
)  # fmt: skip
def test_a_stdout_line_among_the_frames_is_not_the_exception(stdout, raised):
    """The runtime copies stdout and stderr separately, so a line printed just before
    the raise can land inside the traceback (seen on the real tier: the root cause read
    "rank 1: reading my data shard")."""
    lines = [stdout, *_FRAMES, raised]
    interleaved = [*_FRAMES, stdout, raised]
    for seen in (lines, interleaved):
        root = diagnose([ReplicaOutcome("worker-0", "Failed", 1, 1.0, seen, 1)]).root
        assert root is not None and root.exception == raised, (seen, root)
        assert root.tail[0] == _FRAMES[0] and root.tail[-1] == raised


def test_a_traceback_cut_short_names_its_last_frame():
    root = diagnose([ReplicaOutcome("worker-0", "Failed", 1, 1.0, _FRAMES, 137)]).root
    assert root is not None and root.exception == _FRAMES[-1].strip()
