"""User defaults, persisted as JSON in the data directory.

The data directory holds local jobs and this file: ``$JUPYTER_DDL_DATA_DIR`` if set,
else ``$XDG_DATA_HOME/jupyter-ddl`` (``~/.local/share/jupyter-ddl``).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import ValidationError


def data_dir() -> Path:
    env = os.environ.get("JUPYTER_DDL_DATA_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "jupyter-ddl"


@dataclass
class Config:
    backend: str = "local"
    namespace: str | None = None
    kube_context: str | None = None
    registry: str | None = None  # e.g. "registry.example:5000/team"; None: ConfigMap shipping
    insecure_registries: list[str] = field(default_factory=list)
    registry_ca: str | None = None
    base_images: dict[str, str] = field(
        default_factory=lambda: {
            "pytorch": "docker.io/pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
            "tensorflow": "docker.io/tensorflow/tensorflow:2.21.0",
            "mpi": "docker.io/horovod/horovod:latest",
        }
    )
    python: str | None = None  # interpreter for local replicas; None: the kernel's
    log_tail: int = 200  # lines kept per replica in the cell output
    refresh_hz: float = 4.0  # dashboard updates per second (at most 10)
    # Kubernetes API timeouts, seconds: opening a connection; the answer to a read
    # (discovery, get, list: what `%ddl list` and the sidebar wait on); to a write.
    kube_connect_timeout: float = 3.0
    kube_read_timeout: float = 5.0
    kube_write_timeout: float = 30.0
    # Kubeflow Trainer release a TrainJob is written for (v2.0.0 ... v2.3.0); None: found
    # on the cluster at submit, the newest supported in a dry run
    trainer_release: str | None = None

    def set(self, key: str, value: str) -> None:
        """Set one key from text (``%ddl config key=value``)."""
        names = {f.name: f for f in fields(self)}
        if key not in names:
            raise ValidationError(
                f"config: unknown key {key!r}; known keys: {', '.join(sorted(names))}"
            )
        current = getattr(self, key)
        parsed: Any = value
        if isinstance(current, bool):
            parsed = value.lower() in ("1", "true", "yes", "on")
        elif isinstance(current, int):
            parsed = int(value)
        elif isinstance(current, float):
            parsed = float(value)
        elif isinstance(current, list):
            parsed = [v for v in value.split(",") if v]
        elif isinstance(current, dict):
            k, _, v = value.partition("=")
            parsed = {**current, k: v}
        elif value in ("", "none", "None"):
            parsed = None
        setattr(self, key, parsed)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def config_path() -> Path:
    return data_dir() / "config.json"


def load_config() -> Config:
    path = config_path()
    cfg = Config()
    if path.exists():
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return cfg
        known = {f.name for f in fields(Config)}
        for k, v in data.items():
            if k in known:
                setattr(cfg, k, v)
    return cfg


def save_config(cfg: Config) -> None:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(cfg.to_dict(), indent=2, sort_keys=True))
    tmp.replace(path)
