"""The public API: ``jupyter_ddl`` re-exports what users and the notebooks use, lazily,
and the notebooks and README import nothing below it."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import jupyter_ddl

ROOT = Path(__file__).resolve().parents[1]
INIT = Path(jupyter_ddl.__file__)

# `from jupyter_ddl.x import ...`, `import jupyter_ddl.x`, or a call through a private path
PRIVATE = re.compile(
    r"\bfrom\s+jupyter_ddl\.\w|\bimport\s+jupyter_ddl\.\w|\bjupyter_ddl\.[a-z_.]+\.\w+\("
)


def private_uses(text: str) -> list[str]:
    """The lines of ``text`` that reach below the public API."""
    return [line.strip() for line in text.splitlines() if PRIVATE.search(line)]


def test_private_uses_are_found():
    assert private_uses("from jupyter_ddl.manager import default_manager\n")
    assert private_uses("import jupyter_ddl.core.shape as s\n")
    assert private_uses("see `jupyter_ddl.manager.default_manager()`\n")
    assert not private_uses("from jupyter_ddl import JobSpec, default_manager\n")
    assert not private_uses("python -m jupyter_ddl.diagnostics.gpucheck\n")


def _notebook_code(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_notebooks_and_readme_use_only_the_public_api():
    texts = {p: p.read_text(encoding="utf-8") for p in (ROOT / "notebooks" / "src").glob("*.py")}
    texts.update({p: _notebook_code(p) for p in (ROOT / "notebooks").rglob("*.ipynb")})
    texts[ROOT / "README.md"] = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(texts) > 10
    found = {str(p.relative_to(ROOT)): private_uses(t) for p, t in texts.items()}
    assert {p: lines for p, lines in found.items() if lines} == {}


def test_every_public_name_resolves_and_is_typed():
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    typed: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom)
                typed.update(a.name for a in imp.names)
                for a in imp.names:  # the lazy table names the same module
                    assert jupyter_ddl._EXPORTS[a.name] == imp.module, a.name
    assert typed == set(jupyter_ddl._EXPORTS)
    assert set(jupyter_ddl.__all__) >= typed | {"__version__", "load_ipython_extension"}
    assert len(jupyter_ddl.__all__) == len(set(jupyter_ddl.__all__))
    for name in jupyter_ddl.__all__:
        assert getattr(jupyter_ddl, name) is not None, name
    assert "JobSpec" in dir(jupyter_ddl)


def test_an_unknown_name_is_an_attribute_error():
    try:
        jupyter_ddl.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")


def test_the_api_imports_no_framework_no_widget_no_kubernetes_client():
    code = (
        "import sys, jupyter_ddl as d; d.default_manager(); d.JobSpec; d.JobResults; "
        "d.ValidationError; print(sorted(m for m in ('torch', 'tensorflow', 'kubernetes',"
        " 'ipywidgets', 'jupyter_server', 'IPython') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_the_package_is_marked_typed():
    assert (INIT.parent / "py.typed").is_file()
