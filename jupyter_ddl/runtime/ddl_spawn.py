"""What a process the cell spawns needs from the cell: its definitions.

Shipped beside ``ddl_runtime.py``; stdlib only, never imports ``jupyter_ddl``.

Python's "spawn" start method (ignite's ``idist.Parallel(nproc_per_node=...)``,
``torch.multiprocessing.spawn``, a ``multiprocessing`` pool) starts a fresh interpreter
that re-runs the parent's main script as ``__mp_main__`` and then unpickles the target
function *by name* from it. A script keeps its training under
``if __name__ == "__main__":``; a notebook cell has no such guard, and the cell runs
inside ``main.py``'s ``__main__`` guard, so ``__mp_main__`` would lack every function
the cell defined ("Can't get attribute 'training' on <module '__mp_main__'>").

``main.py`` calls :func:`define_cell` when it runs as ``__mp_main__``: it replays the
cell's imports, functions, classes and top-level assignments, and nothing else (the
loops, ``with`` blocks and calls that start the training stay in the parent). An
assignment that cannot run in the child (it needs the process group, or names only
the parent has) is skipped: the child only needs what the pickled target refers to.
"""

from __future__ import annotations

import ast
from typing import Any

# Statements a spawned child replays: what a script would define above its
# `if __name__ == "__main__":` guard.
DEFINITIONS = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
)


def definitions(source: str) -> list[ast.stmt]:
    """The top-level statements of ``source`` a spawned child replays, in order."""
    return [node for node in ast.parse(source).body if isinstance(node, DEFINITIONS)]


def define_cell(cell_path: str, namespace: dict[str, Any]) -> list[str]:
    """Run the cell's definitions in ``namespace`` (the child's ``__mp_main__``).

    ``report`` is defined first, so a spawned function may call it as the cell's
    top level does. Returns the source line of each statement that was skipped
    because it raised (for tests; the child stays quiet about them)."""
    import ddl_runtime  # beside this file, on sys.path (main.py put it there)

    ddl_runtime.line_buffered_output()  # sibling processes share the replica's pipe
    namespace.setdefault("report", ddl_runtime.report)
    with open(cell_path, encoding="utf-8") as f:
        source = f.read()
    skipped = []
    for node in definitions(source):
        module = ast.Module(body=[node], type_ignores=[])
        try:
            exec(compile(module, cell_path, "exec"), namespace)
        except Exception:  # noqa: BLE001 - the parent owns this statement's failure
            skipped.append(ast.get_source_segment(source, node) or f"line {node.lineno}")
    return skipped
