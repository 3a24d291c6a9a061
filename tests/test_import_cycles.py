"""No import cycle inside jupyter_ddl: every import (at module level, inside a
function, where a cycle hides best, or under ``TYPE_CHECKING``, which a type checker
follows and a layer must not point back through) is an edge, and the graph must have
no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import jupyter_ddl

ROOT = Path(jupyter_ddl.__file__).parent
PACKAGE = "jupyter_ddl"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The package's modules ``path`` imports (``from . import x`` names module x)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:  # `from . import kinds` imports the module kinds
                sub = f"{target}.{a.name}"
                out.add(sub if sub in modules else target)
    found = set()
    for target in out:
        # an imported name that is a module, else the module that holds it
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    paths = [p for p in ROOT.rglob("*.py") if "labextension" not in p.parts]
    modules = {_module_name(p) for p in paths}
    return {_module_name(p): imports_of(p, modules) for p in paths}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as the list of its modules (first repeated last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _edges_of_package_init(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """A submodule importing its own package's ``__init__`` is not a cycle Python
    trips on when that ``__init__`` only re-exports: drop child → ancestor edges."""
    return {m: {t for t in targets if not m.startswith(t + ".")} for m, targets in graph.items()}


def test_the_package_has_no_import_cycle():
    graph = _edges_of_package_init(import_graph())
    assert graph["jupyter_ddl.notebook.magics"], "the walk found no imports: the test is blind"
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_walk_sees_function_level_imports_and_finds_cycles(tmp_path):
    # the manager imports the dry run inside dry_run() only
    graph = import_graph()
    assert "jupyter_ddl.manifests.dryrun" in graph["jupyter_ddl.manager"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_type_checking_imports_are_edges_too():
    # session.py names JobManager for its annotations only
    assert "jupyter_ddl.manager" in import_graph()["jupyter_ddl.notebook.session"]
