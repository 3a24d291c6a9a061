"""Measure the scaling notebook's reference plot on this machine and store it beside it.

Runs ``why-it-helps.ipynb`` headless without quick mode (the learners' full sweep),
then writes ``notebooks/reference/why-it-helps.png`` (the same two panels) and
``why-it-helps.json`` (the numbers and a label). The label names the machine (CPU
model, cores, GPUs), the date, and the load average before and just after the sweep,
so nobody takes the plot for their own machine, or for a quiet one when it was not.

    python3 notebooks/reference.py            # measure and write both files
    python3 notebooks/reference.py --max-load 1.5  # refuse to measure on a busier machine

Run it on the quietest machine you have; the notebook shows whatever is stored.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "reference"
TITLES = {"cnn": "convolutional network", "tiny": "tiny model (9 weights)"}


def cpu_model() -> str:
    """The CPU's marketing name where the system says it, else the architecture."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def label(outcome: dict[str, Any], when: str) -> str:
    cores, gpus = outcome["cores"], outcome.get("gpus", 0)
    before, after = outcome.get("load_before"), outcome.get("load_after")
    load = (
        "no load average on this system"
        if before is None
        else f"load average {before:.1f} before, {after:.1f} just after (its own processes included)"
    )
    return (
        f"Reference, not your machine: {cpu_model()}, {cores} cores"
        f"{f', {gpus} GPU(s)' if gpus else ', CPU only'}, {when}; {load}; "
        "full sweep (5 windows of 8 steps)"
    )


def draw(outcome: dict[str, Any], text: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    counts = outcome["counts"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, name in zip(axes, ("cnn", "tiny"), strict=True):
        med, low, high = zip(
            *(outcome["samples_per_s"][f"{name}-{n}"] for n in counts), strict=True
        )
        err = [
            [m - lo for m, lo in zip(med, low, strict=True)],
            [h - m for m, h in zip(med, high, strict=True)],
        ]
        ax.errorbar(
            counts, med, yerr=err, marker="o", capsize=4, label="measured (median, min–max)"
        )
        ax.plot(counts, [med[0] * n for n in counts], "--", color="grey", label="perfect scaling")
        ax.set(title=TITLES[name], xlabel="processes", ylabel="samples / s", xticks=counts)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    fig.suptitle(text, fontsize=7.5, wrap=True)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-load", type=float, default=None, help="refuse above this load average")
    args = ap.parse_args(argv)
    if args.max_load is not None and hasattr(os, "getloadavg"):
        now = os.getloadavg()[0]
        if now > args.max_load:
            print(
                f"load average {now:.1f} is above --max-load {args.max_load}: try again when quieter"
            )
            return 1
    sys.path.insert(0, str(HERE))
    import execute

    os.environ.pop("DDL_WORKSHOP_QUICK", None)  # the learners' full sweep
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    try:
        _, outcome, _ = execute.execute(HERE / "why-it-helps.ipynb", timeout=900)
    except execute.NotebookFailed as e:
        print(f"the notebook failed, nothing written: {e}")
        return 1
    if not outcome.get("ok"):
        print(f"the notebook's checks failed, nothing written: {outcome}")
        return 1
    text = label(outcome, when)
    OUT.mkdir(exist_ok=True)
    base = {k: v[0] for k, v in outcome["samples_per_s"].items()}
    speedup = {
        f"{name}-{n}": round(base[f"{name}-{n}"] / base[f"{name}-{outcome['counts'][0]}"], 3)
        for name in ("cnn", "tiny")
        for n in outcome["counts"][1:]
    }
    record = {
        "label": text,
        "machine": {"cpu": cpu_model(), "cores": outcome["cores"], "system": platform.system()},
        "date": when,
        "load_before": outcome.get("load_before"),
        "load_after": outcome.get("load_after"),
        "speedup": speedup,
        "samples_per_s": outcome["samples_per_s"],
        "to_target": outcome.get("to_target"),
    }
    draw(outcome, text, OUT / "why-it-helps.png")
    (OUT / "why-it-helps.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(text)
    print(f"wrote {OUT / 'why-it-helps.png'} and {OUT / 'why-it-helps.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
