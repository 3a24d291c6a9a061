"""User defaults, persisted as JSON in the data directory.

The data directory holds local jobs and this file: ``$JUPYTER_DDL_DATA_DIR`` if set,
else ``$XDG_DATA_HOME/jupyter-ddl`` (``~/.local/share/jupyter-ddl``).

Every key has a type and a range (``_RULES``), checked when ``%ddl config`` sets it
(one line naming the key, what it must be, and an example) and when the file is read:
a file that is not a JSON object, or a key whose value is not valid, gives one warning
line naming the file and falls back to the defaults, so a broken file never breaks a
command.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from jupyter_ddl._util import diskfull
from jupyter_ddl._util.atomic import write_atomic
from jupyter_ddl.core.names import is_dns1123_label, is_env_name
from jupyter_ddl.core.placement import GANG_PODGROUP_MAKERS
from jupyter_ddl.core.strategies import FRAMEWORKS
from jupyter_ddl.core.trainer import RELEASES, release_named
from jupyter_ddl.errors import ResourceError, ValidationError
from jupyter_ddl.i18n import tr


def data_dir() -> Path:
    """Where jobs, logs and the config live ($JUPYTER_DDL_DATA_DIR, else the XDG data dir)."""
    env = os.environ.get("JUPYTER_DDL_DATA_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "jupyter-ddl"


@dataclass
class Config:
    """The user's defaults, read from ``config.json`` and checked key by key."""

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
    refresh_hz: float = 4.0  # dashboard updates per second (1 to 10)
    logs_max_lines: int = 1000  # lines `%ddl logs` prints without --tail
    # Kubernetes API timeouts, seconds: opening a connection; the answer to a read
    # (discovery, get, list: what `%ddl list` and the sidebar wait on); to a write.
    kube_connect_timeout: float = 3.0
    kube_read_timeout: float = 5.0
    kube_write_timeout: float = 30.0
    # How long a submit trusts the access reviews an earlier one was granted (0: asks
    # every time); discovery and the Trainer release are kept while the backend lives.
    kube_access_cache_seconds: float = 300.0
    # Kubeflow Trainer release a TrainJob is written for (v2.0.0 ... v2.3.0); None: found
    # on the cluster at submit, the newest supported in a dry run
    trainer_release: str | None = None
    # Who makes a --gang job's PodGroup: "client" (we do: the operators' shipped
    # deployments pass no gang flag) or "operator" (the cluster's operators run with
    # --gang-scheduler-name / --gang-scheduling and make it themselves)
    gang_podgroup: str = "client"
    # The local backend: most processes one job may start (None: 4 x CPU cores), the
    # kernel variables replicas get besides the base set, seconds without output or
    # CPU before a job is noted as stalled (0: never), and how long a replica that
    # finished the cell waits for its peers at the end.
    local_max_processes: int | None = None
    local_env_passthrough: list[str] = field(default_factory=list)
    stall_seconds: float = 60.0
    teardown_timeout: float = 300.0
    # How long a warm replica interpreter (torch imported, replicas forked from it)
    # waits for the next torch job before it exits; 0: none, every job starts cold.
    local_warm_seconds: float = 600.0
    # The language of what the magics print (en, ko, ja, zh-Hans, zh-Hant); None: the
    # kernel's locale (LANGUAGE, LC_ALL, LC_MESSAGES, LANG), else English.
    language: str | None = None

    def set(self, key: str, value: str) -> None:
        """Set one key from text (``%ddl config key=value``); ValidationError (one
        line naming the key and what it takes) when the key or the value is not valid."""
        rule = _RULES.get(key)
        if rule is None:
            said = tr(
                "unknown key {key!r}; known keys: {known}", key=key, known=", ".join(sorted(_RULES))
            )
            raise ValidationError(f"config: {said}")
        setattr(self, key, rule.check(key, rule.parse(key, value, getattr(self, key))))

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-ready data (what ``config.json`` holds)."""
        return asdict(self)


# -- the rules ---------------------------------------------------------------------------
def _problem(key: str, what: str, example: str) -> ValidationError:
    return ValidationError(f"config: {key} {what}; e.g. `%ddl config {key}={example}`")


@dataclass(frozen=True)
class _Rule:
    kind: str  # text, int, float, list, map
    optional: bool = False  # "none" (or nothing) sets None
    low: float | None = None
    high: float | None = None
    # a sanity ceiling, said only when passed: a count or a time beyond it is a typo,
    # and would overflow where it is used (a deque's length, a C timeout)
    cap: float | None = None
    example: str = ""
    extra: Callable[[str, Any], None] | None = None  # further checks of a typed value

    def parse(self, key: str, text: str, current: Any) -> Any:
        text = text.strip()
        if self.optional and text.lower() in ("", "none", "null"):
            return None
        try:
            if self.kind == "int":
                return int(text)
            if self.kind == "float":
                return float(text)
        except ValueError:
            raise _problem(key, f"must be a number, not {text!r}", self.example) from None
        if self.kind == "list":
            return [v.strip() for v in text.split(",") if v.strip()]
        if self.kind == "map":
            k, sep, v = text.partition("=")
            if not sep or not k.strip() or not v.strip():
                raise _problem(key, f"takes NAME=VALUE, not {text!r}", self.example)
            return {**current, k.strip(): v.strip()}
        return text

    def check(self, key: str, value: Any) -> Any:
        """``value`` if it is of this key's type and range (JSON numbers become the
        key's number type); ValidationError otherwise."""
        if value is None and self.optional:
            return None
        if self.kind in ("int", "float"):
            allowed = (int, float) if self.kind == "float" else (int,)
            if (
                isinstance(value, bool)
                or not isinstance(value, allowed)
                or not math.isfinite(value)
            ):
                raise _problem(key, "must be a number", self.example)
            if self.cap is not None and value > self.cap:
                raise _problem(
                    key, f"must be at most {self.cap:g}, not {_number(value)}", self.example
                )
            value = float(value) if self.kind == "float" else value
            if (self.low is not None and value < self.low) or (
                self.high is not None and value > self.high
            ):
                span = _span(self.low, self.high)
                raise _problem(key, f"must be {span}, not {_number(value)}", self.example)
        elif self.kind == "text" and not (isinstance(value, str) and value):
            raise _problem(key, "must be a non-empty text", self.example)
        elif self.kind == "list" and not _strings(value):
            raise _problem(key, "must be a list of names", self.example)
        elif self.kind == "map" and not (
            isinstance(value, dict) and _strings(list(value)) and _strings(list(value.values()))
        ):
            raise _problem(key, "must map names to values", self.example)
        if self.extra is not None:
            self.extra(key, value)
        return value


def _number(value: float) -> str:
    """A number as a line can hold it (an absurdly long integer by its digit count)."""
    if isinstance(value, int) and abs(value) >= 10**15:
        return f"a {len(str(abs(value)))}-digit number"
    return f"{value:g}"


def _span(low: float | None, high: float | None) -> str:
    low = 0 if low is None else low
    if high is None:
        return f"at least {low:g}"
    return f"from {low:g} to {high:g}"


def _strings(values: Any) -> bool:
    return isinstance(values, list) and all(isinstance(v, str) and v for v in values)


def _known_backend(key: str, value: str) -> None:
    # here: importlib.metadata (tens of ms) loads only when a backend name is checked
    from jupyter_ddl.backends.names import backend_names

    if value not in backend_names():
        raise _problem(
            key, f"{value!r} is no backend (choose {', '.join(backend_names())})", "local"
        )


def _gang_podgroup(key: str, value: str) -> None:
    if value not in GANG_PODGROUP_MAKERS:
        raise _problem(
            key,
            f"{value!r} is not who makes PodGroups ({', '.join(GANG_PODGROUP_MAKERS)})",
            "operator",
        )


def _trainer_release(key: str, value: str) -> None:
    try:
        release_named(value)
    except ValidationError:
        raise _problem(
            key, f"{value!r} is no Trainer release ({', '.join(RELEASES)})", "v2.1.0"
        ) from None


def _frameworks(key: str, value: dict[str, str]) -> None:
    unknown = sorted(set(value) - set(FRAMEWORKS))
    if unknown:
        raise _problem(
            key,
            f"names frameworks ({', '.join(FRAMEWORKS)}), not {', '.join(unknown)}",
            "pytorch=docker.io/pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
        )


def _namespace(key: str, value: str | None) -> None:
    if value is not None and not is_dns1123_label(value):
        raise _problem(key, f"{value!r} is no namespace name (a DNS label)", "team-a")


_PYTHONS: dict[tuple[str, float], bool] = {}  # (program, mtime) -> runs as Python 3


def _interpreter(key: str, value: str | None) -> None:
    if value is None:
        return
    program = shutil.which(value)
    if program is None:
        raise _problem(key, f"{value!r} is no program found here", "/usr/bin/python3")
    if not _is_python3(program):  # else every job fails later with a bare "exit code 1"
        raise _problem(key, f"{value!r} does not run as a Python 3 interpreter", "/usr/bin/python3")


def _is_python3(program: str) -> bool:
    """Whether ``program -c ...`` answers as Python 3 (asked once per program file)."""
    try:
        seen = (program, os.stat(program).st_mtime)
    except OSError:
        return False
    if seen not in _PYTHONS:
        try:
            r = subprocess.run(
                [program, "-c", "import sys; print(sys.version_info[0])"],
                capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL,
            )  # fmt: skip
            _PYTHONS[seen] = r.returncode == 0 and r.stdout.strip() == "3"
        except (OSError, subprocess.SubprocessError):
            _PYTHONS[seen] = False
    return _PYTHONS[seen]


def _language(key: str, value: str | None) -> None:
    from jupyter_ddl.i18n import LANGUAGES, normalize

    if value is not None and normalize(value) is None:
        raise _problem(key, f"{value!r} is no language shipped ({', '.join(LANGUAGES)})", "ko")


def _env_names(key: str, value: list[str]) -> None:
    bad = [v for v in value if not is_env_name(v) or "=" in v]
    if bad:
        raise _problem(key, f"takes variable names, not {', '.join(bad)}", "HF_HOME,WANDB_MODE")


_SECONDS = _Rule("float", low=1e-3, cap=86400, example="10")
_RULES: dict[str, _Rule] = {
    "backend": _Rule("text", example="local", extra=_known_backend),
    "namespace": _Rule("text", optional=True, example="team-a", extra=_namespace),
    "kube_context": _Rule("text", optional=True, example="my-cluster"),
    "registry": _Rule("text", optional=True, example="registry.example/team"),
    "insecure_registries": _Rule("list", example="localhost:5000,registry.lan"),
    "registry_ca": _Rule("text", optional=True, example="/etc/ssl/team-ca.pem"),
    "base_images": _Rule(
        "map",
        example="pytorch=docker.io/pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
        extra=_frameworks,
    ),  # fmt: skip
    "python": _Rule("text", optional=True, example="/usr/bin/python3", extra=_interpreter),
    "log_tail": _Rule("int", low=1, cap=100_000, example="500"),
    "refresh_hz": _Rule("float", low=1, high=10, example="4"),
    "logs_max_lines": _Rule("int", low=1, cap=10_000_000, example="5000"),
    "kube_connect_timeout": _SECONDS,
    "kube_read_timeout": _SECONDS,
    "kube_write_timeout": _SECONDS,
    "kube_access_cache_seconds": _Rule("float", low=0, cap=86400, example="60"),
    "local_max_processes": _Rule("int", optional=True, low=1, cap=4096, example="16"),
    "local_env_passthrough": _Rule("list", example="HF_HOME,WANDB_MODE", extra=_env_names),
    "stall_seconds": _Rule("float", low=0, cap=7 * 86400, example="120"),
    "teardown_timeout": _Rule("float", low=1, cap=86400, example="600"),
    "local_warm_seconds": _Rule("float", low=0, cap=7 * 86400, example="1800"),
    "trainer_release": _Rule("text", optional=True, example="v2.1.0", extra=_trainer_release),
    "gang_podgroup": _Rule("text", example="operator", extra=_gang_podgroup),
    "language": _Rule("text", optional=True, example="ko", extra=_language),
}
assert set(_RULES) == {f.name for f in fields(Config)}, "every config key needs a rule"


# -- the file ----------------------------------------------------------------------------
def config_path() -> Path:
    """The config file: ``config.json`` in the data dir."""
    return data_dir() / "config.json"


def _warn(line: str) -> None:
    print(f"jupyter-ddl warning: {line}", file=sys.stderr)


def load_config(warn: Callable[[str], None] = _warn) -> Config:
    """The saved defaults; a file that cannot be used, or keys with values that are
    not valid, give one ``warn`` line (naming the file) and the defaults instead."""
    path = config_path()
    cfg = Config()
    try:
        text = path.read_text()
    except FileNotFoundError:
        return cfg
    except OSError as e:
        warn(f"{path} cannot be read ({e.strerror}); using the defaults")
        return cfg
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        warn(
            f"{path} is not a JSON object of settings; using the defaults "
            "(`%ddl config key=value` writes a new file)"
        )
        return cfg
    bad = []
    for key, value in data.items():
        rule = _RULES.get(key)
        if rule is None:
            continue  # a key of another version
        try:
            setattr(cfg, key, rule.check(key, value))
        except ValidationError:
            bad.append(key)
    if bad:
        warn(
            f"{path}: {', '.join(bad)} not valid, using the default; "
            f"`%ddl config {bad[0]}=...` sets a new value"
        )
    return cfg


def save_config(cfg: Config) -> None:
    """Write the file, readable by its owner only (it may name registries and clusters)."""
    path = config_path()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(path, json.dumps(cfg.to_dict(), indent=2, sort_keys=True).encode())
    except OSError as e:
        if not diskfull.is_full(e):
            raise
        raise ResourceError(
            diskfull.message(path), hint=tr("free space there; the settings were not saved")
        ) from None
