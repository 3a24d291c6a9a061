"""%%distribute and %ddl through IPython itself (run_cell / run_cell_magic, no kernel),
over a JobManager whose local backend is the in-memory FakeBackend."""

from __future__ import annotations

import json
import threading
import time

import pytest

from jupyter_ddl.errors import CaptureError, JobFailed, ShownError, ValidationError
from jupyter_ddl.models import JobState
from jupyter_ddl.present.state import format_start
from tests.support import require

from .conftest import run


def _play(fake, name: str, state=JobState.SUCCEEDED, lines=3, message=None):
    """Drive a submitted job from another thread, as a backend would."""

    def go():
        deadline = time.monotonic() + 10
        while name not in fake.jobs and time.monotonic() < deadline:
            time.sleep(0.01)
        fake.start(name)
        for i in range(lines):
            fake.log(name, "master-0", f"step {i} loss={1 / (i + 1):.3f}")
            fake.metric(name, "master-0", i, loss=1 / (i + 1))
        fake.finish(name, state, message)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def test_flags_become_the_spec_and_the_bundle_holds_the_captured_code(shell, magics, fake):
    run(shell, "import math\ndef lr_at(step):\n    return 0.1 * math.exp(-step)")
    run(shell, "print('unrelated')\nCOLOR = 'blue'")
    shell.run_cell_magic(
        "distribute",
        "--strategy torch-ddp --replicas 4 --gpus 1 --cpu 2 --memory 4Gi --env A=1 --name j1 "
        "--restart-policy onfailure --gang --queue q1",
        "!pip install einops\nprint(lr_at(rank))",
    )
    spec, bundle = fake.submitted[-1]
    assert spec.name == "j1" and dict(spec.shape.counts) == {"Master": 1, "Worker": 3}
    assert spec.default_resources.gpu == 1 and spec.default_resources.memory == "4Gi"
    assert spec.env == {"A": "1"} and spec.restart_policy.value == "OnFailure"
    assert spec.gang.queue == "q1" and spec.gang.scheduler == "volcano"
    cell = bundle.files["cell.py"].decode()
    assert "def lr_at" in cell and "import math" in cell and "COLOR" not in cell
    assert bundle.requirements == ["einops"]


def test_replicas_is_the_strategy_total_for_every_shape(shell, magics, fake):
    cases = {
        "--strategy tf-multi-worker-mirrored --replicas 3": {"Worker": 3},
        "--strategy tf-multi-worker-mirrored --replicas 3 --chief 1": {"Chief": 1, "Worker": 2},
        # ParameterServer: N counts the workers; chief and PS are not training replicas
        "--strategy tf-parameter-server --replicas 3 --ps 2": {"Chief": 1, "Worker": 3, "PS": 2},
        "--strategy horovod --replicas 2": {"Launcher": 1, "Worker": 2},
        "--strategy torch-elastic --replicas 3": {"Worker": 3},
        "--strategy torch-ddp --replicas 1": {"Master": 1},
        "--strategy ignite --replicas 1": {"Master": 1},
        "--strategy deepspeed --replicas 1": {"Master": 1},
        "--strategy torch-ddp --workers 0": {"Master": 1},
        "--strategy torch-ddp --replicas 3 --workers 2": {"Master": 1, "Worker": 2},
        "--strategy torch-ddp": {"Master": 1, "Worker": 1},
    }
    for i, (flags, expected) in enumerate(cases.items()):
        shell.run_cell_magic("distribute", f"{flags} --name shape{i}", "x = 1")
        spec = fake.submitted[-1][0]
        assert dict(spec.shape.counts) == expected, flags
        # the spec names every role, so no default can come back when it is read again
        assert spec.replicas == {r: expected.get(r, 0) for r in spec.replicas}, flags


def test_secret_env_passes_names_never_values(shell, magics, fake, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "s3cr3t-value")
    shell.run_cell_magic(
        "distribute", "--strategy torch-ddp --secret-env HF_TOKEN --name sec", "x = 1"
    )
    spec, bundle = fake.submitted[-1]
    assert spec.secret_env == ["HF_TOKEN"]
    assert "s3cr3t-value" not in json.dumps(spec.to_dict())
    assert all(b"s3cr3t-value" not in content for content in bundle.files.values())
    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(ShownError) as e:
        shell.run_cell_magic(
            "distribute", "--strategy torch-ddp --secret-env HF_TOKEN --name sec2", "x = 1"
        )
    assert "HF_TOKEN" in str(e.value) and "not set" in str(e.value)


@pytest.mark.parametrize(
    "flags,error,fragment",
    [
        ("--strategy nope", ValidationError, "unknown strategy 'nope'"),
        ("--strategy torch-ddp --replicas two", ValidationError, "invalid int value"),
        ("--strategy torch-ddp --bogus 1", ValidationError, "unrecognized arguments: --bogus"),
        ("--strategy torch-dp --workers 2", ValidationError, "torch-dp has no Worker role"),
        ("--strategy tf-mirrored --replicas 3", ValidationError, "choose --replicas 1"),
        ("--strategy torch-dp --replicas 2", ValidationError, "choose --replicas 1"),
        (
            "--strategy torch-ddp --replicas 3 --workers 5",
            ValidationError,
            "--replicas 3 and --workers 5 disagree: for torch-ddp --replicas 3 means "
            "Master 1 + Worker 2; give only one of them",
        ),
        ("--strategy torch-ddp --replicas 0", ValidationError, "choose --replicas 1 or more"),
        (
            "--strategy tf-multi-worker-mirrored --replicas 1 --chief 1",
            ValidationError,
            "choose --replicas 2 or more",
        ),
        ("--strategy torch-ddp --env NOEQUALS", ValidationError, "NAME=value"),
        ("--strategy torch-ddp --restart-policy sometimes", ValidationError, "OnFailure"),
        ("", ValidationError, "--strategy is missing"),
    ],
)
def test_bad_flags_give_one_line_and_submit_nothing(shell, magics, fake, flags, error, fragment):
    with pytest.raises(ShownError) as e:
        shell.run_cell_magic("distribute", flags, "x = 1")
    assert isinstance(e.value.error, error)
    assert fragment in str(e.value) and "\n" not in str(e.value)
    assert e.value._render_traceback_()[0].count("\n") == 0
    assert fake.submitted == []


def test_a_failing_cell_shows_one_line_not_a_traceback(shell, magics, fake, capsys):
    result = shell.run_cell(
        "%%distribute --strategy torch-ddp --replicas 0\nx = 1", store_history=True
    )
    out = capsys.readouterr()
    assert isinstance(result.error_in_exec, ShownError)
    assert "Traceback" not in out.out + out.err
    assert "choose --replicas 1 or more" in out.out + out.err


def test_syntax_errors_and_refused_magics_stop_before_submitting(shell, magics, fake):
    with pytest.raises(ShownError) as e:
        shell.run_cell_magic("distribute", "--strategy torch-ddp", "for x in range(3)\n  pass")
    assert isinstance(e.value.error, CaptureError) and "cell line 1" in str(e.value)
    with pytest.raises(ShownError) as e:
        shell.run_cell_magic("distribute", "--strategy torch-ddp", "x = 1\n%matplotlib inline")
    assert "%matplotlib inline" in str(e.value)
    assert fake.submitted == []


def test_wait_blocks_until_the_job_ends_and_the_dashboard_saw_everything(shell, magics, fake):
    _play(fake, "w1", lines=5)
    shell.run_cell_magic("distribute", "--strategy torch-ddp --name w1 --wait", "x = 1")
    dash = magics.dashboards["w1"]
    assert not dash.running and dash.state.state == "Succeeded"
    assert list(dash.state.replicas["master-0"].lines)[-1].startswith("step 4")
    assert [p[1] for p in dash.state.replicas["master-0"].metrics[("loss", "report")]][0] == 1.0


def test_wait_on_a_failed_job_fails_the_cell_in_one_line(shell, magics, fake):
    _play(fake, "f1", state=JobState.FAILED, message="worker-0 exited with code 1")
    with pytest.raises(ShownError) as e:
        shell.run_cell_magic("distribute", "--strategy torch-ddp --name f1 --wait", "x = 1")
    assert isinstance(e.value.error, JobFailed)
    assert "worker-0 exited with code 1" in str(e.value) and "%ddl logs f1" in str(e.value)


def test_without_wait_the_cell_returns_at_once_and_ddl_wait_sees_the_end(
    shell, magics, fake, capsys
):
    t0 = time.monotonic()
    shell.run_cell_magic("distribute", "--strategy torch-ddp --name nw", "x = 1")
    assert time.monotonic() - t0 < 1.0
    assert magics.dashboards["nw"].running
    _play(fake, "nw")
    shell.run_line_magic("ddl", "wait nw")
    assert "Succeeded" in capsys.readouterr().out
    assert not magics.dashboards["nw"].running


def test_build_only_without_a_registry_is_one_line(shell, magics, fake):
    with pytest.raises(ShownError) as e:
        shell.run_cell_magic("distribute", "--strategy torch-ddp --build-only", "x = 1")
    assert "\n" not in str(e.value)
    if hasattr(magics.manager, "build_image"):
        assert "registry" in str(e.value)  # the real builder: nothing configured
    else:
        assert "image building is not available" in str(e.value)
    assert fake.submitted == []


def test_build_only_builds_through_the_job_api_with_progress(shell, fake, capsys):
    from dataclasses import dataclass

    from jupyter_ddl.config import Config
    from jupyter_ddl.manager import JobManager
    from jupyter_ddl.notebook.magics import load

    @dataclass
    class Built:
        ref: str
        pushed: bool = True

    class BuildingManager(JobManager):  # a fake builder: no registry needed
        built: list = []

        def build_image(self, spec, bundle, progress=None):
            self.built.append((spec.name, bundle.digest))
            for done in (0, 5, 10):
                progress(done, 10)
            return Built(f"reg.example/ddl-nb:{bundle.short_digest}@sha256:abc")

    m = BuildingManager(config=Config(), backends={"local": fake})
    load(shell, manager=m)
    shell.run_cell_magic("distribute", "--strategy torch-ddp --build-only --name img", "x = 1")
    out = capsys.readouterr().out
    assert m.built and m.built[0][0] == "img" and fake.submitted == []
    assert "100%" in out and "image: reg.example/ddl-nb:" in out and "(pushed)" in out


def test_dry_run_prints_script_and_yaml_and_starts_nothing(shell, magics, fake, capsys):
    require.module("jupyter_ddl.manifests.dryrun")
    run(shell, "def helper():\n    return 1")
    shell.run_cell_magic(
        "distribute", "--strategy torch-ddp --replicas 2 --name dry --dry-run", "helper()"
    )
    out = capsys.readouterr().out
    assert "def helper" in out and "kind: PyTorchJob" in out
    assert fake.submitted == []


def test_ddl_commands(shell, magics, fake, capsys, data_dir):
    _play(fake, "c1", lines=4)
    shell.run_cell_magic(
        "distribute", "--strategy torch-ddp --replicas 2 --name c1 --wait", "x = 1"
    )
    capsys.readouterr()
    shell.run_line_magic("ddl", "list")
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].split()[5:7] == ["started", "age"]
    row = next(r for r in listed if r.startswith("c1 "))
    job = fake.jobs["c1"].status
    assert format_start(job.started or job.created) in row  # when, in the kernel's time
    shell.run_line_magic("ddl", "status c1")
    out = capsys.readouterr().out
    assert "Succeeded" in out and "worker-0" in out
    shell.run_line_magic("ddl", "logs c1 --replica master-0 --tail 2")
    assert capsys.readouterr().out.splitlines() == [
        "[master-0] step 2 loss=0.333",
        "[master-0] step 3 loss=0.250",
    ]
    shell.run_line_magic("ddl", "strategies")
    out = capsys.readouterr().out
    assert "tf-parameter-server" in out and "Asynchronous training" in out
    shell.run_line_magic("ddl", "config log_tail=77")
    assert "log_tail = 77" in capsys.readouterr().out
    assert json.loads((data_dir / "config.json").read_text())["log_tail"] == 77
    shell.run_line_magic("ddl", "delete c1")
    assert "c1" not in fake.jobs
    for bad, fragment in [
        ("frobnicate", "unknown command"),
        ("status", "name"),
        ("status ghost", "ghost"),
    ]:
        with pytest.raises(ShownError) as e:
            shell.run_line_magic("ddl", bad)
        assert fragment in str(e.value)


def test_cancel_and_attach_replay_the_logs(shell, magics, fake, capsys):
    shell.run_cell_magic("distribute", "--strategy torch-ddp --name at", "x = 1")
    fake.start("at")
    fake.log("at", "master-0", "before attach")
    magics.dashboards["at"].detach()
    assert magics.dashboards["at"].wait(5)
    shell.run_line_magic("ddl", "attach at")
    fake.log("at", "master-0", "after attach")
    shell.run_line_magic("ddl", "cancel at")
    assert fake.cancelled == ["at"] and "Cancelled" in capsys.readouterr().out
    dash = magics.dashboards["at"]
    assert dash.wait(5)
    assert list(dash.state.replicas["master-0"].lines) == ["before attach", "after attach"]
    assert dash.state.state == "Cancelled"


def test_abbreviated_flags_are_refused(shell, magics, fake):
    with pytest.raises(ShownError) as e:
        shell.run_cell_magic("distribute", "--strategy torch-ddp --worker 2", "x = 1")
    assert "unrecognized arguments: --worker" in str(e.value)
    assert fake.submitted == []


def test_ddl_commands_default_to_the_last_job_of_this_kernel(shell, magics, fake, capsys):
    with pytest.raises(ShownError) as e:
        shell.run_line_magic("ddl", "status")
    assert "no job started in this kernel yet" in str(e.value)
    shell.run_cell_magic("distribute", "--strategy torch-ddp --name last1", "x = 1")
    assert shell.user_ns["_ddl_job"] == "last1"
    _play(fake, "last1")
    shell.run_line_magic("ddl", "wait")
    assert "last1" in capsys.readouterr().out


def test_reports_reads_report_lines_back_per_replica(manager, fake):
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.core.metrics import METRIC_MARKER
    from jupyter_ddl.models import JobSpec

    manager.submit(JobSpec("rep1", "torch-ddp", {"Master": 1, "Worker": 1}), build_bundle("x=1"))
    fake.log("rep1", "master-0", f'{METRIC_MARKER} {{"step": 1, "loss": 0.5}}')
    fake.log("rep1", "worker-0", "step 1 loss=0.7")  # a metric, but not a report() line
    fake.log("rep1", "worker-0", f'{METRIC_MARKER} {{"loss": 0.4, "checksum": 2.0}}')
    assert manager.reports("rep1") == [
        ("master-0", {"loss": 0.5}),
        ("worker-0", {"loss": 0.4, "checksum": 2.0}),
    ]


@pytest.mark.parametrize(
    "assign",
    # bound where capture finds no source to ship, so the value would travel as a literal
    ["tok = %env GITHUB_TOKEN", "import os\nglobals().update(tok=os.environ['GITHUB_TOKEN'])"],
)
@pytest.mark.parametrize("flags", ["", " --dry-run"])
def test_a_secret_read_into_a_variable_is_refused_before_anything_is_written(
    shell, magics, fake, monkeypatch, capsys, assign, flags
):
    secret = "ghp_s3cr3t-0f-the-kernel-81c2"
    monkeypatch.setenv("GITHUB_TOKEN", secret)
    run(shell, assign)
    with pytest.raises(ShownError) as e:
        shell.run_cell_magic(
            "distribute", f"--strategy torch-ddp --name leak{flags}", "print(len(tok))"
        )
    message = str(e.value)
    assert "`tok` holds the value of the kernel's GITHUB_TOKEN" in message, message
    assert "--secret-env GITHUB_TOKEN" in message and "\n" not in message
    assert secret not in message and secret not in capsys.readouterr().out
    assert not fake.submitted
    # a variable whose name does not look secret is shipped as before
    monkeypatch.setenv("GITHUB_REPOSITORY", "someone/some-repository")
    run(shell, "repo = %env GITHUB_REPOSITORY")
    shell.run_cell_magic("distribute", "--strategy torch-ddp --name fine", "print(repo)")
    assert b"someone/some-repository" in fake.submitted[-1][1].files["cell.py"]


def test_ddl_logs_cuts_a_huge_line_and_says_where_it_is(shell, magics, fake, capsys, data_dir):
    _play(fake, "huge1", lines=1)
    shell.run_cell_magic("distribute", "--strategy torch-ddp --replicas 2 --name huge1 --wait", "x = 1")  # fmt: skip
    fake.log("huge1", "master-0", "y" * 1_048_576)
    capsys.readouterr()
    shell.run_line_magic("ddl", "logs huge1 --replica master-0 --tail 6")
    out = capsys.readouterr().out
    assert len(out) < 10_000
    assert "1,044,576 more characters cut; the whole line is in" in out
