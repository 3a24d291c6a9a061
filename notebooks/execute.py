"""Run a workshop notebook headless in a real kernel and print what it achieved.

Every notebook ends by leaving a dict named ``outcome`` in its kernel (for example
the job's state, the final loss, whether the replicas agree). This runner executes a
copy of the notebook with nbclient, appends one cell that prints that dict as a
marked JSON line, reads it back, and writes the executed copy elsewhere: the stored
notebook is never touched.

    python3 notebooks/execute.py notebooks/quickstart.ipynb [--out DIR] [--timeout S]

Exit status: 0 when the notebook ran and ``outcome["ok"]`` is true, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

MARKER = "@@notebook-outcome@@"
OUTCOME_CELL = (
    f"import json as _json\nprint({MARKER!r} + _json.dumps(outcome, default=str, sort_keys=True))"
)
REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / ".test-artifacts"


class NotebookFailed(Exception):
    """A cell raised, or the notebook left no ``outcome``; ``executed`` is the partial copy."""

    def __init__(self, message: str, executed: Path) -> None:
        super().__init__(f"{message} (executed copy: {executed})")
        self.executed = executed


def find_outcome(nb: nbformat.NotebookNode) -> dict[str, Any] | None:
    """The outcome dict printed by the appended cell, or None."""
    for cell in reversed(nb.cells):
        for output in cell.get("outputs", []):
            text = output.get("text", "") if output.get("output_type") == "stream" else ""
            for line in text.splitlines():
                if line.startswith(MARKER):
                    data = json.loads(line[len(MARKER) :])
                    return data if isinstance(data, dict) else None
    return None


def kernel_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The kernel's environment: ours, with this checkout first on PYTHONPATH so the
    kernel (and the local job supervisor it starts) import this tree's jupyter_ddl
    even where the package is not installed."""
    env = dict(os.environ if base is None else base)
    paths = [str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def execute(
    path: Path, *, out_dir: Path = DEFAULT_OUT, timeout: int = 600
) -> tuple[nbformat.NotebookNode, dict[str, Any], Path]:
    """Execute ``path`` in a fresh python3 kernel whose working directory is the
    notebook's folder (environment: ``kernel_env()``). Returns the executed notebook,
    its outcome and where the copy was written. Raises NotebookFailed (a cell raised,
    a cell timed out, no outcome)."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(OUTCOME_CELL))
    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out_dir / f"{path.stem}.executed.ipynb"
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    try:
        client.execute(env=kernel_env())
    except CellExecutionError as e:
        first = str(e).strip().splitlines()
        raise NotebookFailed(f"a cell failed: {first[-1] if first else e}", executed) from e
    except TimeoutError as e:
        raise NotebookFailed(f"a cell ran longer than {timeout} s", executed) from e
    finally:
        nbformat.write(nb, executed)  # also the partial copy, to see what failed
    outcome = find_outcome(nb)
    if outcome is None:
        raise NotebookFailed("the notebook left no `outcome` dict", executed)
    return nb, outcome, executed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebook", type=Path)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the executed copy goes")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = ap.parse_args(argv)
    start = time.monotonic()
    try:
        _, outcome, executed = execute(args.notebook, out_dir=args.out, timeout=args.timeout)
    except NotebookFailed as e:
        print(f"FAILED {args.notebook.name}: {e}", file=sys.stderr)
        return 1
    print(
        f"{args.notebook.name}: ran in {time.monotonic() - start:.0f} s; executed copy {executed}"
    )
    for key, value in outcome.items():
        print(f"  {key}: {value}")
    return 0 if outcome.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
