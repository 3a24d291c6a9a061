"""A cell's requirements: its ``!pip install`` lines and ``--requirements`` (a file or
names), each refused with one line when it cannot be read as packages."""

from __future__ import annotations

import shlex
from pathlib import Path

from jupyter_ddl.errors import CaptureError, ValidationError
from jupyter_ddl.i18n import tr

_PIP_VALUE_OPTIONS = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c"}


def extract_requirements(cell: str) -> tuple[str, list[str]]:
    """Turn ``!pip install`` / ``%pip install`` lines into requirements; the lines stay
    as comments so line numbers in tracebacks still match the cell."""
    lines: list[str] = []
    reqs: list[str] = []
    for number, line in enumerate(cell.splitlines(), 1):
        packages = _pip_packages(line, number)
        if packages is None:
            lines.append(line)
            continue
        reqs.extend(p for p in packages if p not in reqs)
        indent = line[: len(line) - len(line.lstrip())]
        lines.append(f"{indent}pass  # requirement: {line.strip()}")
    return "\n".join(lines), reqs


def _pip_packages(line: str, number: int) -> list[str] | None:
    text = line.strip()
    if not text.startswith(("!", "%")):
        return None
    try:
        words = shlex.split(text.lstrip("!%"))
    except ValueError:
        return None
    if words[:1] in (["python"], ["python3"]) and words[1:3] == ["-m", "pip"]:
        words = words[2:]
    if len(words) < 2 or words[0] not in ("pip", "pip3") or words[1] != "install":
        return None
    return _pip_args(words[2:], line, number)


def _pip_args(args: list[str], line: str, number: int) -> list[str]:
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif "{" in arg or "$" in arg:
            raise CaptureError(
                tr(
                    "cell line {number}: `{line}` uses a variable; write the package names literally",
                    number=number, line=line.strip(),
                )
            )  # fmt: skip
        elif arg in ("-r", "--requirement"):
            raise CaptureError(
                tr(
                    "cell line {number}: `{line}` reads a file; use `%%distribute --requirements "
                    "FILE` instead",
                    number=number, line=line.strip(),
                )
            )  # fmt: skip
        elif arg in _PIP_VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            out.append(arg)
    if not out:
        raise CaptureError(
            tr(
                "cell line {number}: `{line}` names no package; add one",
                number=number,
                line=line.strip(),
            )
        )
    return out


def read_requirements(value: str) -> list[str]:
    """``--requirements``: a requirements file path or comma/space separated names."""
    path = Path(value).expanduser()
    if path.is_file():
        lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
        return [line for line in lines if line]
    if _looks_like_a_file(value):  # pip would take a missing file's name for a package
        said = tr(
            "no such file (from {cwd}); give an existing requirements file, or package names "
            "such as numpy,einops",
            cwd=Path.cwd(),
        )
        raise ValidationError(f"--requirements {value}: {said}")
    return [p for p in value.replace(",", " ").split() if p]


def _looks_like_a_file(value: str) -> bool:
    """A path, not a package name: a separator, a leading dot or tilde, a file suffix."""
    v = value.strip()
    if "://" in v:  # a URL pip installs from
        return False
    return (
        "/" in v.split("@", 1)[0]
        or v.startswith((".", "~"))
        or v.lower().endswith((".txt", ".in", ".cfg", ".toml"))
    )
