"""Code capture: pure tests over text, then through a real IPython shell's history."""

from __future__ import annotations

import io
import types

import pytest

from jupyter_ddl.errors import CaptureError
from jupyter_ddl.notebook.capture.cell import capture_cell, history_of
from jupyter_ddl.notebook.capture.requirements import extract_requirements
from tests.support import require

from .conftest import run

HISTORY = [
    (1, "import math\nimport os, json as js\nprint('setup done')"),
    (2, "SCALE = 3\n\ndef helper(x):\n    return math.sqrt(x) * SCALE\n"),
    (3, "def unrelated():\n    return 42\nfor i in range(3):\n    print(i)"),
    (4, "class Model:\n    def run(self):\n        return helper(16)\n"),
]


def _executes(code: str) -> dict:
    ns: dict = {"report": lambda **kw: None}
    exec(compile(code, "<captured>", "exec"), ns)
    return ns


def test_dependencies_come_first_and_the_script_runs():
    c = capture_cell("result = Model().run()", HISTORY)
    sources = [d.source.split("\n")[0] for d in c.definitions]
    assert sources == ["import math", "SCALE = 3", "def helper(x):", "class Model:"]
    assert _executes(c.code)["result"] == 12.0


def test_imports_kept_and_unrelated_cells_left_out():
    c = capture_cell("print(js.dumps(os.sep))", HISTORY)
    assert "import os, json as js" in c.code
    assert "unrelated" not in c.code and "helper" not in c.code
    assert "print(i)" not in c.code and "setup done" not in c.code  # side effects never shipped


def test_latest_definition_wins():
    history = [*HISTORY, (5, "SCALE = 10"), (6, "def helper(x):\n    return x + SCALE")]
    c = capture_cell("out = helper(1)", history)
    assert "SCALE = 3" not in c.code and "math" not in c.code
    assert _executes(c.code)["out"] == 11


def test_redefinition_reading_its_previous_value_keeps_both():
    history = [(1, "lr = 0.1"), (2, "lr = lr / 10")]
    c = capture_cell("print(lr)", history)
    assert c.code.index("lr = 0.1") < c.code.index("lr = lr / 10")
    assert _executes(c.code)["lr"] == pytest.approx(0.01)


def test_decorated_functions_keep_their_decorators():
    history = [
        (
            1,
            "import functools\n@functools.lru_cache(None)\ndef fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)",
        )
    ]
    c = capture_cell("v = fib(20)", history)
    assert "@functools.lru_cache(None)" in c.code
    assert _executes(c.code)["v"] == 6765


def test_pip_install_lines_become_requirements():
    code, reqs = extract_requirements(
        "!pip install -q torchmetrics 'einops>=0.7'\n%pip install -U tqdm\nx = 1"
    )
    assert reqs == ["torchmetrics", "einops>=0.7", "tqdm"]
    assert code.splitlines()[2] == "x = 1"  # line numbers preserved for tracebacks
    c = capture_cell("!pip install rich\nimport rich\n", [])
    assert c.requirements == ["rich"] and "!pip" not in c.code.replace("# requirement: !pip", "")


@pytest.mark.parametrize(
    "cell,line",
    [
        ("x = 1\n!ls -la\n", "!ls -la"),
        ("%time y = 2\n", "%time y = 2"),
        ("files = !ls\n", "files = !ls"),
        ("len?\n", "len?"),
        ("!pip install -r reqs.txt\n", "!pip install -r reqs.txt"),
    ],
)
def test_other_magics_and_shell_lines_are_refused_naming_the_line(cell, line):
    with pytest.raises(CaptureError) as e:
        capture_cell(cell, [])
    msg = str(e.value)
    assert line in msg and "\n" not in msg


def test_syntax_errors_are_reported_before_anything_else():
    with pytest.raises(CaptureError) as e:
        capture_cell("x = 1\nfor i in range(3)\n    print(i)\n", [])
    assert "cell line 2" in str(e.value) and "syntax error" in str(e.value)


def test_unshippable_live_objects_are_warned_with_advice():
    class Frame:  # stands in for a pandas DataFrame: recognised by its module
        pass

    Frame.__module__ = "pandas.core.frame"
    ns = {"df": Frame(), "fh": io.StringIO("x"), "np": types.ModuleType("numpy")}
    history = [(1, "import numpy as np\ndf = load()")]
    c = capture_cell("print(df, fh, np)", history, ns)
    df_warn = next(w for w in c.warnings if w.startswith("`df`"))
    assert "cell [1]" in df_warn and "file" in df_warn
    fh_warn = next(w for w in c.warnings if w.startswith("`fh`"))
    assert "open file" in fh_warn and "open the file inside the cell" in fh_warn
    assert not any(w.startswith("`np`") for w in c.warnings)  # modules travel as imports


def test_torch_module_is_recognised_as_a_model(monkeypatch):
    require.module("torch")
    import torch

    ns = {"model": torch.nn.Linear(2, 1)}
    c = capture_cell("model(x)", [(1, "x = 1")], ns)
    assert any("model in memory" in w and "weights" in w for w in c.warnings)


def test_names_from_the_namespace_without_a_cell_are_recreated():
    ns = {"EPOCHS": 5, "js": __import__("json"), "odd": object()}
    c = capture_cell("print(EPOCHS, js.dumps(1), odd, nowhere)", [], ns)
    assert "EPOCHS = 5" in c.code and "import json as js" in c.code
    assert any(w.startswith("`odd`") for w in c.warnings)
    assert any(w.startswith("`nowhere`") and "NameError" in w for w in c.warnings)


def test_runtime_names_are_not_warned():
    c = capture_cell("report(loss=1.0, step=rank)\nprint(world_size, device, local_rank)", [])
    assert c.warnings == []


def test_capture_reads_a_real_shells_history(shell):
    run(shell, "import math\nRADIUS = 2")
    run(shell, "def area(r):\n    return math.pi * r * r")
    run(shell, "junk = [1, 2, 3]\nprint(junk)")
    run(shell, "%%time\ndef perimeter(r):\n    return 2 * math.pi * r")
    history = history_of(shell)
    c = capture_cell("a = area(RADIUS) + perimeter(1)", history, shell.user_ns)
    assert "junk" not in c.code
    ns = _executes(c.code)
    assert ns["a"] == pytest.approx(3.14159 * 4 + 2 * 3.14159, rel=1e-4)


@pytest.mark.parametrize(
    "name,secret",
    [("GITHUB_TOKEN", True), ("AWS_SECRET_ACCESS_KEY", True), ("DB_PASSWORD", True),
     ("OPENAI_API_KEY", True), ("HF_TOKEN_PATH", False), ("GITHUB_REPOSITORY", False),
     ("KEYBOARD", False), ("AWS_ACCESS_KEY_ID", False)],
)  # fmt: skip
def test_which_variable_names_look_secret(name, secret):
    from jupyter_ddl.notebook.capture.secrets import looks_secret

    assert looks_secret(name) is secret


def test_a_script_holding_a_secret_value_is_refused_naming_variable_and_flag():
    env = {"MY_TOKEN": "abcdefgh-123", "SHORT_KEY": "1"}
    captured = capture_cell("print(x, y)", [(1, "y = 1")], {"x": "abcdefgh-123"}, {})
    assert "abcdefgh-123" in captured.code  # without the environment nothing is refused
    with pytest.raises(CaptureError) as e:
        capture_cell("print(x, y)", [(1, "y = 1")], {"x": "abcdefgh-123"}, env)
    assert "`x` holds the value of the kernel's MY_TOKEN" in str(e.value)
    assert "--secret-env MY_TOKEN" in str(e.value) and "abcdefgh" not in str(e.value)
    assert capture_cell("print(y + 1)", [(1, "y = 1")], {}, env).code  # "1" is too short
