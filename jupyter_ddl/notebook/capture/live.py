"""What a name in the kernel's namespace is, as far as shipping it goes (pure, no imports
of any framework: objects are recognised by their type's module and class names)."""

from __future__ import annotations

import ast
import io
import socket
import threading
import types
from typing import Any

#: names the runtime shim defines in every replica (jupyter_ddl/runtime): never warned about
RUNTIME_NAMES = frozenset({"strategy", "rank", "world_size", "local_rank", "device", "report"})

_DATA_LIBS = {"pandas", "numpy", "polars", "pyarrow", "scipy", "xarray", "datasets"}
_TENSOR_LIBS = {"torch", "tensorflow", "jax", "jaxlib", "keras", "tf_keras", "cupy"}
_MODEL_BASES = {
    ("torch.nn.modules.module", "Module"),
    ("keras.src.models.model", "Model"),
    ("keras.src.layers.layer", "Layer"),
    ("tf_keras.src.engine.training", "Model"),
    ("tensorflow.python.module.module", "Module"),
}
_MAX_LITERAL = 10_000  # characters: a bigger constant belongs in a file, not the code


def literal_source(value: Any) -> str | None:
    """``repr(value)`` when it is a plain literal that evaluates back to an equal value."""
    if not isinstance(value, (int, float, complex, str, bytes, bool, tuple, list, dict, set)):
        return None if value is not None else "None"
    try:
        text = repr(value)
        if len(text) > _MAX_LITERAL or ast.literal_eval(text) != value:
            return None
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return None
    return text


def module_import(name: str, value: Any) -> str | None:
    """``import x`` / ``import a.b as x`` recreating a module bound to ``name``."""
    if not isinstance(value, types.ModuleType):
        return None
    mod = value.__name__
    if mod == name:
        return f"import {mod}"
    return f"import {mod} as {name}"


def _type_root(value: Any) -> str:
    return type(value).__module__.split(".")[0]


def _is_model(value: Any) -> bool:
    return any((c.__module__, c.__name__) in _MODEL_BASES for c in type(value).__mro__)


def unshippable_kind(value: Any) -> str | None:
    """A short description when ``value`` is a live object a replica cannot receive
    (its state exists only in this kernel), else None."""
    if isinstance(value, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)):
        return None
    if _is_model(value):
        return f"model in memory ({type(value).__name__})"
    if isinstance(value, io.IOBase):
        return "open file"
    if isinstance(value, (socket.socket, threading.Thread)):
        return f"live {type(value).__name__.lower()}"
    if isinstance(value, (types.GeneratorType, types.CoroutineType)):
        return "generator in progress"
    root = _type_root(value)
    if root in _TENSOR_LIBS:
        return f"{root} {type(value).__name__} in memory"
    if root in _DATA_LIBS:
        return f"{root} {type(value).__name__} in memory"
    return None


def advice(kind: str) -> str:
    """What to do instead of relying on a live object of this kind."""
    if kind.startswith("model"):
        return "save its weights to a file the replicas can read and load them in the cell, or build the model inside the cell"
    if kind == "open file":
        return "open the file inside the cell"
    if kind.startswith("live") or kind.startswith("generator"):
        return "create it inside the cell"
    return "save it to a file the replicas can read (or load it from its source) inside the cell"


def unshippable_warning(name: str, kind: str, rebuilt_from: int | None) -> str:
    """One line: what ``name`` is, what the job will see, and what to do."""
    if rebuilt_from is not None:
        what = f"each replica re-runs its definition from cell [{rebuilt_from}] instead of receiving its current state"
    else:
        what = "no earlier cell defines it, so the job will not have it"
    return f"`{name}` is a {kind} in this kernel; {what}: {advice(kind)}."
