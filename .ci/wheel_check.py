"""The product as a user gets it: run by the Python of a fresh virtual environment
that holds only the built wheel with its [torch] extra (no test extras, no Node on
PATH). Checks the wheel carries the prebuilt lab extension and switches the server
extension on, then runs the quickstart notebook plus ``%ddl list``, ``%ddl status``
and ``%ddl logs`` through a real kernel (nbclient) and checks what they printed.

    python .ci/wheel_check.py WHEEL NOTEBOOK WORKDIR

Prints one line per check and the seconds each cell took; exits 1 on the first failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from datetime import datetime
from pathlib import Path

MARKER = "@@outcome@@"
EXTRA_CELLS = [
    "%ddl list",
    "%ddl status",
    "%ddl logs --tail 2",
    "import json, jupyter_ddl\n"
    f"print({MARKER!r} + json.dumps({{**outcome, 'package': jupyter_ddl.__file__}}))",
]


class Failed(Exception):
    pass


def check(ok: bool, what: str) -> None:
    if not ok:
        raise Failed(what)
    print(f"  ok: {what}")


def check_wheel(wheel: Path, work: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    check(
        any(re.search(r"labextensions/jupyter-ddl/static/remoteEntry\.\w+\.js$", n) for n in names),
        "the wheel carries the prebuilt lab extension",
    )
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(work / "cfg")}
    out = subprocess.run(
        [sys.executable, "-m", "jupyter_server.extension.serverextension", "list"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.stdout + out.stderr)
    check(bool(re.search(r"jupyter_ddl\s+enabled", text)), "the server extension is enabled")
    check(shutil.which("node") is None, "no node on PATH")


def seconds(cell) -> float:
    t = cell.metadata.get("execution", {})
    if "iopub.execute_input" not in t or "shell.execute_reply" not in t:
        return float("nan")
    start = datetime.fromisoformat(t["iopub.execute_input"].replace("Z", "+00:00"))
    end = datetime.fromisoformat(t["shell.execute_reply"].replace("Z", "+00:00"))
    return (end - start).total_seconds()


def text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


def run_notebook(notebook: Path, work: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    run_dir = work / "notebook"
    run_dir.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(notebook, as_version=4)
    first_extra = len(nb.cells)
    nb.cells += [nbformat.v4.new_code_cell(src) for src in EXTRA_CELLS]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "JUPYTER"))}
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR"):
        env[name] = str(work / name.lower())
    env["JUPYTER_DDL_DATA_DIR"] = str(work / "ddl-data")
    env["KUBECONFIG"] = str(work / "no-kubeconfig")  # the same answer on any machine
    env.pop("KUBERNETES_SERVICE_HOST", None)
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(run_dir)}}
    )
    start = time.monotonic()
    try:
        client.execute(env=env, cwd=str(run_dir))
    finally:
        nbformat.write(nb, work / "quickstart.executed.ipynb")
    print(f"  notebook ran in {time.monotonic() - start:.1f} s; cells (s):")
    for cell in nb.cells:
        if cell.cell_type == "code":
            print(f"    {seconds(cell):7.3f}  {cell.source.splitlines()[0][:70]}")

    listed, status, logs, final = nb.cells[first_extra:]
    outcome = next(
        json.loads(line[len(MARKER) :])
        for line in text(final).splitlines()
        if line.startswith(MARKER)
    )
    check(outcome["ok"] and outcome["state"] == "Succeeded", f"the quickstart job: {outcome}")
    check(
        Path(outcome["package"]).resolve().is_relative_to(Path(sys.prefix).resolve()),
        f"the kernel imported the installed wheel ({outcome['package']})",
    )
    rows = text(listed).splitlines()
    check(
        any(re.match(r"\S+\s+local\s+torch-ddp\s+Succeeded\s+0/2", r) for r in rows),
        "%ddl list shows the job",
    )
    check(
        [r for r in rows if r.startswith("kubernetes:")][0].startswith(
            "kubernetes: not configured"
        ),
        "%ddl list names the unconfigured cluster in one line",
    )
    check("Succeeded" in text(status) and "master-0" in text(status), "%ddl status")
    check(
        # the job the kernel started last (the quickstart's second job has 3 replicas)
        re.search(r"\[master-0\] replica 0 of \d+: ", text(logs)) is not None
        and re.search(r"\[worker-0\] replica 1 of \d+: ", text(logs)) is not None,
        "%ddl logs --tail 2 shows each replica's last lines",
    )


def main(argv: list[str]) -> int:
    wheel, notebook, work = Path(argv[0]), Path(argv[1]), Path(argv[2])
    work.mkdir(parents=True, exist_ok=True)
    try:
        check_wheel(wheel, work)
        run_notebook(notebook, work)
    except Failed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
