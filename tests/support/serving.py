"""Waiting for a server process the tests started (Jupyter server, JupyterLab)."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from pathlib import Path


def wait_ready(url: str, proc: subprocess.Popen, log: Path, what: str, timeout: float = 60) -> None:
    """Until ``url`` answers 200; fails with the log's tail when ``proc`` exits or the
    time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"{what} not ready in {timeout}s:\n{log.read_text()[-3000:]}")
