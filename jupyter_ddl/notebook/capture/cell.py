"""Code capture: a ``%%distribute`` cell plus the earlier definitions it needs.

Pure functions over text and a namespace: ``capture_cell(cell, history, user_ns)``
returns the script to ship, its ``!pip install`` requirements and warnings about names
that cannot travel. ``history_of(shell)`` is the one place that reads IPython's state.

How dependencies are found: every earlier top-level definition (import, def, class,
assignment, if/try block) is indexed by the names it binds; the latest definition of a
name wins; starting from the names the cell reads, definitions are pulled in
transitively and emitted dependencies first. Everything else (training loops, prints,
cells that define nothing the cell uses) is left out.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jupyter_ddl.errors import CaptureError
from jupyter_ddl.i18n import tr
from jupyter_ddl.notebook.capture.bindings import (
    BUILTINS,
    bound_names,
    free_names_in_order,
    is_definition,
    needed_names,
)
from jupyter_ddl.notebook.capture.live import (
    RUNTIME_NAMES,
    literal_source,
    module_import,
    unshippable_kind,
    unshippable_warning,
)
from jupyter_ddl.notebook.capture.requirements import extract_requirements
from jupyter_ddl.notebook.capture.secrets import refuse_secrets

# IPython methods that the transformer turns `!cmd`, `%magic`, `x?` lines into.
_IPY_CALLS = {"system", "getoutput", "run_line_magic", "run_cell_magic", "run_line_magic_legacy"}
# Cell magics whose body is ordinary Python worth indexing in history.
_TRANSPARENT_CELL_MAGICS = {"time", "capture", "prun"}


@dataclass(frozen=True)
class Definition:
    """One top-level statement from an earlier cell that binds names."""

    cell: int  # execution count of its cell (0: synthesised from the namespace)
    order: int  # statement position within the cell
    source: str
    binds: frozenset[str]
    needs: frozenset[str]


@dataclass
class Captured:
    code: str  # the script to ship: definitions, then the cell
    cell: str  # the cell alone (pip lines commented out)
    requirements: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    definitions: list[Definition] = field(default_factory=list)


def capture_cell(
    cell: str,
    history: Iterable[tuple[int, str]] = (),
    user_ns: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Captured:
    """Capture ``cell`` (raw text, IPython syntax allowed) against earlier cells.

    ``history``: (execution count, raw source) of the cells executed before, oldest
    first. ``user_ns``: the kernel's namespace, used to recognise modules and live
    objects. ``environ``: the kernel's environment, whose secret-looking values the
    script may not hold. Raises CaptureError for syntax errors, refused IPython lines
    and such a secret.
    """
    ns = user_ns or {}
    code, requirements = extract_requirements(cell)
    tree = parse_cell(code)
    defs = [d for n, src in history for d in definitions_in(n, src)]
    latest = latest_definitions(defs)
    wanted = free_names_in_order(tree.body) - RUNTIME_NAMES
    synthesised, missing = _from_namespace(wanted, latest, ns)
    defs = synthesised + defs
    latest = latest_definitions(defs)
    chosen = select(wanted, defs)
    warnings = _warnings(wanted | {b for d in chosen for b in d.binds}, missing, latest, ns)
    script = render(chosen, code)
    if environ:
        refuse_secrets(script, environ, {b: d.source for d in chosen for b in d.binds})
    return Captured(
        code=script,
        cell=code,
        requirements=requirements,
        warnings=warnings,
        definitions=chosen,
    )


# -- IPython syntax in the cell ------------------------------------------------------------
def transform(source: str) -> str:
    """IPython syntax (``!``, ``%``, ``?``) turned into plain Python calls."""
    from IPython.core.inputtransformer2 import TransformerManager

    return str(TransformerManager().transform_cell(source))


def parse_cell(code: str) -> ast.Module:
    """Parse the cell; refuse IPython lines other than pip installs, naming the line."""
    python = transform(code)
    try:
        tree = ast.parse(python)
    except SyntaxError as e:
        where = tr("cell line {number}", number=e.lineno) if e.lineno else tr("cell")
        text = (e.text or "").strip()
        shown = f": `{text}`" if text else ""
        said = tr(
            "syntax error ({error}){shown}; fix it and run the cell again", error=e.msg, shown=shown
        )
        raise CaptureError(f"{where}: {said}") from None
    raw_lines = code.splitlines()
    for node in ast.walk(tree):
        if _is_ipython_call(node):
            lineno = getattr(node, "lineno", 1)
            raw = raw_lines[lineno - 1].strip() if lineno <= len(raw_lines) else "?"
            raise CaptureError(
                tr(
                    "cell line {number}: `{line}` is IPython syntax, which a replica cannot run; "
                    "use plain Python there (only `!pip install` lines are turned into "
                    "requirements)",
                    number=lineno, line=raw,
                )
            )  # fmt: skip
    return tree


def _is_ipython_call(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    owner = node.func.value
    return (
        node.func.attr in _IPY_CALLS
        and isinstance(owner, ast.Call)
        and isinstance(owner.func, ast.Name)
        and owner.func.id == "get_ipython"
    )


# -- earlier cells ---------------------------------------------------------------------------
def definitions_in(cell_number: int, raw: str) -> list[Definition]:
    """The top-level definitions of one earlier cell; unparsable cells give none."""
    body = _python_body(raw)
    if body is None:
        return []
    try:
        source = transform(body)
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []  # it failed in the kernel too, so it defined nothing
    out = []
    for i, stmt in enumerate(tree.body):
        if is_definition(stmt) and not _mentions_ipython(stmt):
            out.append(
                Definition(
                    cell_number,
                    i,
                    _source_of(source, stmt),
                    frozenset(bound_names(stmt)),
                    frozenset(needed_names(stmt)),
                )
            )
    return out


def _python_body(raw: str) -> str | None:
    stripped = raw.lstrip()
    if not stripped.startswith("%%"):
        return raw
    first, _, rest = stripped.partition("\n")
    magic = first[2:].split(maxsplit=1)[0] if first[2:].strip() else ""
    return rest if magic in _TRANSPARENT_CELL_MAGICS else None


def _mentions_ipython(stmt: ast.stmt) -> bool:
    return any(_is_ipython_call(n) for n in ast.walk(stmt))


def _source_of(source: str, stmt: ast.stmt) -> str:
    start: Any = stmt
    decorators = getattr(stmt, "decorator_list", None)
    if decorators:
        first = decorators[0]  # the '@' sits one column before the expression
        start = types.SimpleNamespace(lineno=first.lineno, col_offset=first.col_offset - 1)
    span = types.SimpleNamespace(
        lineno=start.lineno,
        col_offset=start.col_offset,
        end_lineno=stmt.end_lineno,
        end_col_offset=stmt.end_col_offset,
    )
    return ast.get_source_segment(source, span) or ast.unparse(stmt)  # type: ignore[arg-type]


def latest_definitions(defs: Iterable[Definition]) -> dict[str, Definition]:
    """Name → the last definition binding it (later cells and statements win)."""
    latest: dict[str, Definition] = {}
    for d in sorted(defs, key=lambda d: (d.cell, d.order)):
        for name in d.binds:
            latest[name] = d
    return latest


def select(wanted: set[str], defs: list[Definition]) -> list[Definition]:
    """The definitions ``wanted`` needs, transitively, dependencies first; among
    independent definitions the notebook's own order is kept."""
    latest = latest_definitions(defs)
    deps: dict[Definition, set[Definition]] = {}
    todo = list(_providers(wanted, None, latest, defs))
    while todo:
        d = todo.pop()
        if d not in deps:
            deps[d] = _providers(d.needs, d, latest, defs)
            todo.extend(deps[d])
    return _ordered(deps)


def _providers(
    names: Iterable[str],
    user: Definition | None,
    latest: Mapping[str, Definition],
    defs: list[Definition],
) -> set[Definition]:
    found = set()
    for name in names:
        d = latest.get(name)
        if d is not None and d is user:
            d = _earlier(name, user, defs)  # `x = f(x)` reads the x defined before it
        if d is not None:
            found.add(d)
    return found


def _earlier(name: str, user: Definition, defs: list[Definition]) -> Definition | None:
    key = (user.cell, user.order)
    before = [e for e in defs if name in e.binds and (e.cell, e.order) < key]
    return max(before, key=lambda e: (e.cell, e.order)) if before else None


def _ordered(deps: Mapping[Definition, set[Definition]]) -> list[Definition]:
    """Topological order, smallest (cell, statement) first; cycles (mutually recursive
    functions) are broken in notebook order."""
    key = lambda d: (d.cell, d.order)  # noqa: E731
    waiting = {d: set(ds) - {d} for d, ds in deps.items()}
    out: list[Definition] = []
    while waiting:
        ready = [d for d, ds in waiting.items() if not ds] or [min(waiting, key=key)]
        d = min(ready, key=key)
        out.append(d)
        del waiting[d]
        for ds in waiting.values():
            ds.discard(d)
    return out


def _from_namespace(
    wanted: set[str], latest: Mapping[str, Definition], ns: Mapping[str, Any]
) -> tuple[list[Definition], set[str]]:
    """Definitions recreated from the namespace for names no cell defines (modules,
    plain literals), and the names that remain missing."""
    made: list[Definition] = []
    missing: set[str] = set()
    for name in sorted(wanted - set(latest) - BUILTINS):
        if name not in ns:
            missing.add(name)
            continue
        value = ns[name]
        text = module_import(name, value)
        if text is None and unshippable_kind(value) is None:
            lit = literal_source(value)
            text = f"{name} = {lit}" if lit is not None else None
        if text is not None:
            made.append(Definition(0, len(made), text, frozenset({name}), frozenset()))
        elif unshippable_kind(value) is None:
            missing.add(name)  # e.g. made by exec() or %run: no source to ship
    return made, missing


def _warnings(
    names: set[str], missing: set[str], latest: Mapping[str, Definition], ns: Mapping[str, Any]
) -> list[str]:
    out = []
    for name in sorted(names):
        if name in ns and (kind := unshippable_kind(ns[name])) is not None:
            d = latest.get(name)
            out.append(unshippable_warning(name, kind, d.cell if d and d.cell else None))
    for name in sorted(missing):
        out.append(
            f"`{name}` is not defined by any earlier cell; the job will raise NameError "
            "unless the cell defines it: define it in the cell or in a cell run before."
        )
    return out


def render(chosen: list[Definition], cell_code: str) -> str:
    """The shipped script: each definition under a comment naming its cell, then the cell."""
    parts = []
    for d in chosen:
        origin = f"cell [{d.cell}]" if d.cell else "the kernel's namespace"
        parts.append(f"# from {origin}\n{d.source}")
    parts.append("# the %%distribute cell\n" + cell_code)
    return "\n\n".join(parts) + "\n"


# -- I/O edge: the kernel's history -----------------------------------------------------------
def history_of(shell: Any) -> list[tuple[int, str]]:
    """(execution count, raw source) of this session's cells, oldest first, excluding
    cell magics other than transparent ones (``%%distribute`` cells included)."""
    hm = getattr(shell, "history_manager", None)
    raw: list[str] = list(getattr(hm, "input_hist_raw", None) or shell.user_ns.get("In", []))
    return [(i, src) for i, src in enumerate(raw) if i > 0 and src.strip()]
