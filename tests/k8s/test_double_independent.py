"""The API double may never agree with the product by construction: no module of
``tests/k8s/apidouble`` (nor anything it imports from ``tests/``) imports
``jupyter_ddl``. Checked on the source, import statement by import statement, so a
lazy import inside a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOUBLE = ROOT / "tests" / "k8s" / "apidouble"


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the package
                base = path.parent
                for _ in range(node.level - 1):
                    base = base.parent
                mod = ".".join(base.relative_to(ROOT).parts)
                out.add(f"{mod}.{node.module}" if node.module else mod)
                out |= {f"{mod}.{a.name}" for a in node.names if not node.module}
            else:
                out.add(node.module or "")
    return out


def _file(module: str) -> Path | None:
    path = ROOT.joinpath(*module.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def test_no_module_reached_from_the_double_imports_the_product():
    todo = sorted(DOUBLE.glob("*.py"))
    seen: set[Path] = set()
    offenders = []
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for mod in _imports(path):
            if mod == "jupyter_ddl" or mod.startswith("jupyter_ddl."):
                offenders.append(f"{path.relative_to(ROOT)} imports {mod}")
            elif mod.startswith("tests"):
                found = _file(mod) or _file(mod.rsplit(".", 1)[0])
                if found is not None:
                    todo.append(found)
    assert len(seen) >= 10  # the walk really went through the double's modules
    assert offenders == []


def test_the_walk_catches_a_lazy_import(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    from jupyter_ddl import contract\n    return contract\n")
    assert "jupyter_ddl" in _imports(bad)
