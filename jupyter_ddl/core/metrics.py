"""Training metrics from log lines: one parser shared by every backend.

Recognised, in order (each metric says which one it came from, its ``source``):
1. ``report(**metrics)`` lines from the runtime shim: ``MARKER {"step": 3, "loss": 0.4}``
   (source ``report``);
2. Keras progress lines: ``... - loss: 0.3412 - accuracy: 0.9010`` (source ``keras``);
3. ``key=value`` pairs (``step=10 loss=0.52 lr=1e-3``) and ``key: value`` pairs
   (``epoch: 2, loss: 0.61``) when at least one known metric name appears (source ``log``).

A cell that calls ``report(loss=...)`` inside ``model.fit`` has both a Keras progress
``loss`` and a reported ``loss``: charts keep them apart by source, so neither is
counted twice nor drawn as one saw-tooth.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

#: must equal jupyter_ddl/runtime/ddl_runtime.py's marker (a test checks it)
METRIC_MARKER = "@@ddl-metric@@"

STEP_KEYS = ("step", "global_step", "iteration", "iter", "batch")
EPOCH_KEYS = ("epoch",)
KNOWN = {
    "loss", "val_loss", "accuracy", "acc", "val_accuracy", "val_acc", "lr",
    "learning_rate", "throughput", "samples_per_sec", "perplexity", "auc", "mse", "mae",
    "top1", "top5", "grad_norm",
}  # fmt: skip

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf"
_PAIR = re.compile(rf"\b([A-Za-z_][\w./]*)\s*(?:=|:)\s*({_NUM})(?![\w.])", re.IGNORECASE)
_KERAS = re.compile(r"\d+/\d+\s.*?-\s+\w+:\s")
_EPOCH_SLASH = re.compile(r"\bEpoch\s+(\d+)/(\d+)", re.IGNORECASE)
# A line can only hold a known metric if its lowercase form contains one of these
# (every KNOWN name contains one, as does every val_/train_/test_ key): one search
# instead of the pair regex on the many lines of ordinary output. Lowercasing first is
# ten times faster than re.IGNORECASE here. A test keeps this in step with KNOWN.
_CANDIDATE = re.compile(
    r"loss|acc|lr|learning_rate|throughput|samples_per_sec|perplexity|auc|mse|mae|top"
    r"|grad_norm|val_|train_|test_"
)


#: where a metric came from: ``report()``, a Keras progress line, or other printed pairs
SOURCES = ("report", "keras", "log")


@dataclass(frozen=True)
class Metric:
    values: dict[str, float]
    step: int | None = None
    source: str = "log"  # one of SOURCES


def is_metric_line(text: str) -> bool:
    """A ``report()`` line: it carries metrics only, never text for a person to read, so
    log surfaces leave it out (the raw log keeps it: the metrics are read from there)."""
    return METRIC_MARKER in text


def parse_metric_line(line: str) -> Metric | None:
    """Metrics found in one log line, or None."""
    idx = line.find(METRIC_MARKER)
    if idx >= 0:
        return _from_report(line[idx + len(METRIC_MARKER) :])
    if ("=" not in line and ":" not in line) or _CANDIDATE.search(line.lower()) is None:
        return None  # the fast exit most lines take
    pairs = {k.lower(): v for k, v in _PAIR.findall(line)}
    if not pairs:
        return None
    known = {k: v for k, v in pairs.items() if _known(k)}
    if not known:
        return None
    keras = _KERAS.search(line) is not None
    step = _int(pairs, STEP_KEYS) if not keras else None
    if step is None:
        step = _int(pairs, EPOCH_KEYS)
    values = {k: float(v) for k, v in known.items()}
    return Metric(values, step, "keras" if keras else "log")


def _known(key: str) -> bool:
    base = key.split("/")[-1]
    return base in KNOWN or base.startswith(("val_", "train_", "test_"))


def _int(pairs: dict[str, str], keys: tuple[str, ...]) -> int | None:
    for k in keys:
        if k in pairs:
            try:
                return int(float(pairs[k]))
            except ValueError:
                return None
    return None


def _from_report(payload: str) -> Metric | None:
    try:
        data = json.loads(payload.strip())
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    step = data.pop("step", None)
    values = {}
    for k, v in data.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            values[str(k)] = float(v)
    if not values:
        return None
    return Metric(values, int(step) if isinstance(step, (int, float)) else None, "report")
