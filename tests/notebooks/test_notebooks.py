"""The workshop notebooks: stored clean, using the real flags, and each one running
headless in a real kernel on the local backend with its key outcome checked."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import nbformat
import pytest

from jupyter_ddl.magic_args import parse_line, spec_from_args
from jupyter_ddl.validation import validate

from .conftest import NOTEBOOKS, REPO, code_outputs, load_script, processes_using

NAMES = ["quickstart", "tensorflow-strategies", "pytorch", "mpi-horovod", "laptop-to-cluster"]


def _notebook(name: str) -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


def test_every_notebook_has_a_source_and_the_guide_exists():
    sources = sorted(p.stem for p in (NOTEBOOKS / "src").glob("*.py"))
    assert sources == sorted(NAMES)
    guide = (NOTEBOOKS / "WORKSHOP.md").read_text()
    for name in NAMES:
        assert f"{name}.ipynb" in guide, f"WORKSHOP.md does not schedule {name}"
    for heading in ("## Agenda", "## Prerequisites", "## Laptop setup", "## Troubleshooting"):
        assert heading in guide


def test_stored_notebooks_match_their_sources():
    assert load_script("generate").main(["--check"]) == 0


@pytest.mark.parametrize("name", NAMES)
def test_stored_without_outputs(name):
    nb = _notebook(name)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and code[0].source.strip() == "%load_ext jupyter_ddl"
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


def test_generator_parses_percent_format():
    gen = load_script("generate")
    cells = gen.parse_cells(
        "# %% [markdown]\n# # Title\n#\n# text\n\n# %%\nx = 1\n# %%\n%%distribute -s horovod\nprint(x)\n"
    )
    assert cells == [
        ("markdown", "# Title\n\ntext"),
        ("code", "x = 1"),
        ("code", "%%distribute -s horovod\nprint(x)"),
    ]


def _distribute_lines() -> list[tuple[str, str]]:
    out = []
    for name in NAMES:
        for cell in _notebook(name).cells:
            if cell.cell_type == "code" and cell.source.startswith("%%distribute"):
                out.append((name, cell.source.splitlines()[0][len("%%distribute") :]))
    return out


@pytest.mark.parametrize(("name", "line"), _distribute_lines())
def test_every_distribute_line_is_a_valid_job(name, line):
    """Flags drift with the product: every stored %%distribute line must still parse
    and describe a job that passes validation."""
    args = parse_line(line)
    spec = spec_from_args(args, name="workshop-check", backend="local")
    validate(spec)


def test_a_flag_the_product_does_not_know_is_caught():
    # The check above can fail: a misspelt flag is refused.
    from jupyter_ddl.errors import ValidationError

    with pytest.raises(ValidationError, match="--nodes"):
        parse_line(" --strategy horovod --nodes 2")


# -- running the notebooks (real kernels, real training processes) ------------------


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_quickstart_script(notebook_env):
    """README's `scripts/quickstart` (setup skipped: the suite runs after it) runs the
    quickstart headless, prints its outcome and leaves the stored notebook alone."""
    stored = (NOTEBOOKS / "quickstart.ipynb").read_bytes()
    proc = subprocess.run(
        [str(REPO / "scripts" / "quickstart")],
        env={**os.environ, "SKIP_SETUP": "1", "PYTHON": sys.executable},  # this interpreter
        capture_output=True,
        text=True,
        timeout=380,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    for line in ("state: Succeeded", "replicas: 2", "replicas_agree: True", "ok: True"):
        assert f"  {line}" in proc.stdout.splitlines(), proc.stdout
    assert (NOTEBOOKS / "quickstart.ipynb").read_bytes() == stored
    executed = nbformat.read(REPO / ".test-artifacts" / "quickstart.executed.ipynb", as_version=4)
    outcome = load_script("execute").find_outcome(executed)
    assert outcome["final_loss"] < 0.05  # starts near 200: y = x.[1..8] + noise
    # The saved copy holds each replica's output.
    shown = code_outputs(executed, "%%distribute")
    assert "master-0" in shown and "worker-0" in shown


@pytest.mark.slow
@pytest.mark.tensorflow
@pytest.mark.timeout(600)
def test_tensorflow_strategies(run_notebook):
    from tests.support.require import module

    module("tensorflow")
    module("tf_keras")  # Keras 3 model.fit fails under MultiWorkerMirrored
    _, outcome = run_notebook("tensorflow-strategies", timeout=300)
    assert outcome["states"] == {
        "mirrored": "Succeeded",
        "multi-worker": "Succeeded",
        "parameter-server": "Succeeded",
    }
    for strategy, loss in outcome["final_loss"].items():
        assert loss < 5.0, f"{strategy} did not learn (loss {loss}; it starts above 300)"
    assert outcome["multi_worker_replicas"] == ["worker-0", "worker-1"]
    assert outcome["workers_agree"] is True
    # TF_CONFIG shown live from every role, the evaluator included.
    assert outcome["tf_config_replicas"] == ["chief-0", "evaluator-0", "worker-0", "worker-1"]
    assert outcome["ok"] is True


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_pytorch(run_notebook):
    from tests.support.require import module

    module("ignite")
    nb, outcome = run_notebook("pytorch", timeout=300)
    assert set(outcome["states"].values()) == {"Succeeded"}
    assert outcome["dp_loss"] < 0.1 and outcome["ddp_loss"] < 0.1 and outcome["ignite_loss"] < 0.1
    assert outcome["ddp_agree"] is True and outcome["ignite_agree"] is True
    assert outcome["torchrun_ranks"] == [0, 1, 2, 3]  # 2 replicas x nprocPerNode 2
    assert outcome["torchrun_allreduce"] == [4.0]
    assert outcome["ok"] is True
    nccl = code_outputs(nb, "%%distribute --strategy torch-ddp --replicas 2 --gpus 1")
    assert "kind: PyTorchJob" in nccl and "nvidia.com/gpu" in nccl


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_mpi_horovod(run_notebook):
    from tests.support.require import executable, module

    executable("mpirun")
    module("mpi4py")
    nb, outcome = run_notebook("mpi-horovod")
    assert outcome["states"] == {"hello": "Succeeded", "by_hand": "Succeeded"}
    assert outcome["ranks"] == [0, 1]
    assert outcome["allreduce"] == [3.0]  # 1 + 2
    assert outcome["by_hand_agree"] is True and outcome["by_hand_loss"] < 0.05
    dry = code_outputs(nb, "%%distribute --strategy horovod --workers 4")
    assert "kind: MPIJob" in dry and "slotsPerWorker: 1" in dry
    assert re.search(r"Launcher:\s*\n(\s+\S.*\n)*?\s+replicas: 1", dry)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_laptop_to_cluster(run_notebook):
    nb, outcome = run_notebook("laptop-to-cluster", timeout=120)
    assert {k: v[0] for k, v in outcome["kinds"].items() if k != "gang"} == {
        "TFJob": "TFJob",
        "PyTorchJob": "PyTorchJob",
        "MPIJob": "MPIJob",
        "TrainJob": "TrainJob",
    }
    assert "PodGroup" in outcome["kinds"]["gang"]
    assert outcome["deadlock_without_gang"] is True and outcome["deadlock_with_gang"] is False
    assert outcome["same_digest_twice"] is True
    assert outcome["ok"] is True
    # The magics printed every kind too.
    for kind in ("TFJob", "PyTorchJob", "MPIJob", "TrainJob"):
        assert f"kind: {kind}" in code_outputs(nb, "%%distribute"), kind
    assert "volcano" in code_outputs(nb, "%%distribute --strategy torch-ddp --replicas 4")


# -- the runner and the leftover check themselves ------------------------------------


def test_runner_reads_the_outcome_line_and_ignores_other_output():
    runner = load_script("execute")
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="noise\n"),
        nbformat.v4.new_output(
            "stream", name="stdout", text=runner.MARKER + '{"ok": true, "loss": 0.5}\n'
        ),
    ]
    nb.cells.append(cell)
    assert runner.find_outcome(nb) == {"ok": True, "loss": 0.5}
    cell.outputs = cell.outputs[:1]
    assert runner.find_outcome(nb) is None


def test_kernel_env_puts_this_checkout_first():
    runner = load_script("execute")
    env = runner.kernel_env({"PYTHONPATH": "/elsewhere", "KEEP": "1"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(runner.REPO), "/elsewhere"]
    assert env["KEEP"] == "1"


@pytest.mark.slow
def test_runner_fails_on_a_failing_cell_and_keeps_the_partial_copy(tmp_path, notebook_env):
    runner = load_script("execute")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("print('before')"),
        nbformat.v4.new_code_cell("raise ValueError('boom')"),
        nbformat.v4.new_code_cell("outcome = {'ok': True}"),
    ]
    path = tmp_path / "broken.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(runner.NotebookFailed, match="boom") as err:
        runner.execute(path, out_dir=tmp_path / "out", timeout=60)
    partial = nbformat.read(err.value.executed, as_version=4)
    assert partial.cells[0].outputs[0]["text"] == "before\n"
    assert runner.main([str(path), "--out", str(tmp_path / "out"), "--timeout", "60"]) == 1


def test_leftover_check_finds_a_process_of_the_data_dir(data_dir):
    proc = subprocess.Popen(["sleep", "30"], env={**os.environ})
    try:
        deadline = time.monotonic() + 5
        while proc.pid not in [p.pid for p in processes_using(data_dir)]:
            assert time.monotonic() < deadline, "the sleeping child was not found"
            time.sleep(0.1)
        assert proc.pid not in [p.pid for p in processes_using(data_dir / "other")]
    finally:
        proc.kill()
        proc.wait()
