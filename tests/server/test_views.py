"""The JSON shapes of the REST API, from the pure functions that make them."""

from __future__ import annotations

import pytest

from jupyter_ddl.errors import ValidationError
from jupyter_ddl.models import JobSpec, JobState, JobStatus, LogLine, ReplicaState, ReplicaStatus
from jupyter_ddl.server import answers as views
from jupyter_ddl.server import sse


def _status(state=JobState.RUNNING, **kw):
    reps = [
        ReplicaStatus("Worker", 0, ReplicaState.RUNNING),
        ReplicaStatus("Chief", 0, ReplicaState.PENDING),
    ]
    return JobStatus("j", "local", "tf-multi-worker-mirrored", state, reps, **kw)


def test_parse_states():
    assert views.parse_states(None) is None
    assert views.parse_states("running, FAILED") == {JobState.RUNNING, JobState.FAILED}
    with pytest.raises(ValidationError, match="unknown job state 'Done'.*Succeeded"):
        views.parse_states("Done")


def test_an_unknown_state_of_any_length_is_quoted_short():
    with pytest.raises(ValidationError) as e:
        views.parse_states("Running," + "x" * 1_000_000)
    assert str(e.value).startswith(f"state: unknown job state {'x' * 40!r}... (1000000 characters)")
    assert len(str(e.value)) < 200


def test_parse_int_refuses_negative_and_text():
    assert views.parse_int(None, "offset", default=0) == 0
    assert views.parse_int("7", "offset", default=0) == 7
    for bad in ("-1", "x", "1.5", "\u00b2"):
        with pytest.raises(ValidationError, match="offset: expected an integer from 0 to"):
            views.parse_int(bad, "offset", default=0)


def test_elapsed_stops_when_the_job_ended():
    running = _status(started=100.0)
    assert views.elapsed(running, now=130.0) == 30.0
    done = _status(JobState.SUCCEEDED, started=100.0, finished=160.0)
    assert views.elapsed(done, now=999.0) == 60.0
    assert views.elapsed(_status(), now=5.0) is None


def test_summary_counts_ready_replicas():
    row = views.job_summary(_status(started=1.0), now=2.0)
    assert (row["ready"], row["total"], row["state"], row["finished"]) == (1, 2, "Running", False)


def test_spec_summary_never_carries_env_values():
    spec = JobSpec("j", "torch-ddp", {"Master": 1, "Worker": 3}, env={"WANDB_API_KEY": "k-123"})
    out = views.spec_summary(spec)
    assert out["env_names"] == ["WANDB_API_KEY"] and "k-123" not in repr(out)
    assert set(out["resources"]) == {"Master", "Worker"}


def test_metric_points_use_the_shared_parser():
    lines = [
        LogLine("chief-0", 0, "starting"),
        LogLine("chief-0", 1, "step=5 loss=0.5 accuracy=0.9"),
        LogLine("chief-0", 2, 'x @@ddl-metric@@ {"step": 6, "loss": 0.4}'),
        LogLine("chief-0", 3, "epoch: 2, val_loss: 0.7"),
    ]
    points = views.metric_points(lines)
    assert [(p["step"], p["values"]) for p in points] == [
        (5, {"loss": 0.5, "accuracy": 0.9}),
        (6, {"loss": 0.4}),
        (2, {"val_loss": 0.7}),
    ]


def test_default_metrics_replica_prefers_the_chief():
    assert views.default_metrics_replica(_status()) == "chief-0"
    assert views.next_offsets([LogLine("a", 4, ""), LogLine("b", 1, "")], 0) == {"a": 5, "b": 2}


def test_sse_frames_and_resume():
    frame = sse.log_event(LogLine("worker-1", 41, 'say "hi"\tok', 1.0))
    assert frame.startswith("id: worker-1:41\nevent: log\ndata: {")
    assert frame.endswith("}\n\n") and frame.count("\n") == 4  # one data line, always
    assert sse.resume_offset("worker-1:41", "worker-1") == 42
    assert sse.resume_offset("worker-1:41", "worker-0") is None
    assert sse.resume_offset("garbage", "worker-1") is None
    assert sse.resume_offset(None, "worker-1") is None
