"""Name analysis for code capture (pure): which names a statement binds and which it reads.

The analysis is deliberately approximate in the safe direction: a statement "needs"
every name it reads that it does not bind itself, including names read inside function
bodies (they are looked up when the function is called, in the replica).
"""

from __future__ import annotations

import ast
import builtins

from jupyter_ddl.runtime.ddl_spawn import DEFINITIONS

BUILTINS = frozenset(dir(builtins)) | {"__name__", "__file__", "__builtins__"}

# Top-level statements that define things and are cheap to re-run in a replica: what a
# spawned child replays (ddl_spawn, shipped into images and so stdlib-only, is their
# home) and if/try blocks that bind names. Loops, `with` blocks and bare expressions run
# side effects (training, I/O) and are never shipped.
_DEFINING = (*DEFINITIONS, ast.If, ast.Try)


def is_definition(stmt: ast.stmt) -> bool:
    """True for imports, def/class, assignments, and if/try blocks binding names."""
    return isinstance(stmt, _DEFINING) and bool(bound_names(stmt))


def bound_names(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement binds in the module namespace."""
    out: set[str] = set()
    _collect_bindings(stmt, out)
    return out


def _collect_bindings(node: ast.AST, out: set[str]) -> None:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            if alias.name != "*":
                out.add(alias.asname or alias.name.split(".")[0])
        return
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        out.add(node.name)  # the body is a scope of its own
        return
    if isinstance(node, ast.Lambda):
        return
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        out.add(node.id)
        return
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return  # comprehension variables do not leak
    for child in ast.iter_child_nodes(node):
        _collect_bindings(child, out)


def loaded_names(node: ast.AST) -> set[str]:
    """Every name read anywhere inside ``node`` (function bodies included), minus the
    names bound in the nested scopes that read them (parameters, locals) and builtins."""
    reads: set[str] = set()
    _collect_reads(node, reads, frozenset())
    return reads - BUILTINS


def _collect_reads(node: ast.AST, out: set[str], local: frozenset[str]) -> None:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        if node.id not in local:
            out.add(node.id)
        return
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        _reads_of_function(node, out, local)
        return
    if isinstance(node, ast.ClassDef):
        for part in [*node.bases, *node.keywords, *node.decorator_list]:
            _collect_reads(part, out, local)
        inner = local | _body_bindings(node.body)
        for stmt in node.body:
            _collect_reads(stmt, out, inner)
        return
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        targets: set[str] = set()
        for gen in node.generators:
            _collect_bindings(gen.target, targets)
        inner = local | targets
        for child in ast.iter_child_nodes(node):
            _collect_reads(child, out, inner)
        return
    for child in ast.iter_child_nodes(node):
        _collect_reads(child, out, local)


def _reads_of_function(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, out: set[str], local: frozenset[str]
) -> None:
    args = node.args
    defaults = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
    for d in defaults:
        _collect_reads(d, out, local)
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    if isinstance(node, ast.Lambda):
        _collect_reads(node.body, out, local | params)
        return
    for part in node.decorator_list:
        _collect_reads(part, out, local)
    if node.returns is not None:
        _collect_reads(node.returns, out, local)
    declared_global = {n for s in ast.walk(node) if isinstance(s, ast.Global) for n in s.names}
    inner = local | params | (_body_bindings(node.body) - declared_global)
    for stmt in node.body:
        _collect_reads(stmt, out, inner)


def _body_bindings(body: list[ast.stmt]) -> set[str]:
    out: set[str] = set()
    for stmt in body:
        _collect_bindings(stmt, out)
    return out


def needed_names(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement needs from elsewhere (reads minus its own bindings).

    A function may call itself, and ``x = x + 1`` needs an earlier ``x``: only
    def/class/import names are subtracted for the statement itself.
    """
    reads = loaded_names(stmt)
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        reads.discard(stmt.name)
    return reads


def free_names_in_order(statements: list[ast.stmt]) -> set[str]:
    """Names a block reads before binding them, following its statements (and the
    bodies of loops, ``with``, ``if`` and ``try``) in order."""
    free: set[str] = set()
    _walk_block(statements, set(), free)
    return free


def _walk_block(statements: list[ast.stmt], bound: set[str], free: set[str]) -> None:
    for stmt in statements:
        _walk_stmt(stmt, bound, free)


def _read(node: ast.AST | None, bound: set[str], free: set[str]) -> None:
    if node is not None:
        free |= loaded_names(node) - bound


def _bind(target: ast.AST | None, bound: set[str]) -> None:
    if target is not None:
        _collect_bindings(target, bound)


def _walk_stmt(stmt: ast.stmt, bound: set[str], free: set[str]) -> None:
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        _read(stmt.iter, bound, free)
        _bind(stmt.target, bound)
        _walk_block(stmt.body + stmt.orelse, bound, free)
    elif isinstance(stmt, (ast.While, ast.If)):
        _read(stmt.test, bound, free)
        _walk_block(stmt.body + stmt.orelse, bound, free)
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        for item in stmt.items:
            _read(item.context_expr, bound, free)
            _bind(item.optional_vars, bound)
        _walk_block(stmt.body, bound, free)
    elif isinstance(stmt, ast.Try):
        _walk_block(stmt.body, bound, free)
        for handler in stmt.handlers:
            _read(handler.type, bound, free)
            if handler.name:
                bound.add(handler.name)
            _walk_block(handler.body, bound, free)
        _walk_block(stmt.orelse + stmt.finalbody, bound, free)
    else:
        free |= needed_names(stmt) - bound
        bound |= bound_names(stmt)
