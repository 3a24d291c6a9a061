"""Every ``%%distribute`` flag, declared once: a field of ``DistributeArgs`` whose
metadata (``Flag``) says how it is written, helped, offered by the form and copied into
the spec. The parser, ``--help``, the form's ``args()``, ``spec_from_args``' plain
copies and README's flag table are all made from these declarations (pure)."""

from __future__ import annotations

import argparse
import dataclasses
import re
import shlex
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from jupyter_ddl.errors import ValidationError
from jupyter_ddl.i18n import N_, tr

#: the ipywidgets form's field for a flag, an attribute of the form named as the flag's
#: field: a text box (empty: not given), a number, a drop-down, a check box (checked:
#: the flag given bare), or one number per role the chosen strategy lets the user set
Widget = Literal["text", "int", "choice", "check", "role"]


@dataclass(frozen=True)
class Flag:
    """How one ``DistributeArgs`` field is written as a flag."""

    help: str
    short: str | None = None  # "-s"
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    bare: str | None = None  # the value of the flag given without one (--gang)
    widget: Widget | None = None  # the form's field for it (None: not in the form)
    kube_only: bool = False  # the form asks for it on the kubernetes backend only
    role: str | None = None  # a role count: the replica role it sets
    spec: bool = False  # copied unchanged into the JobSpec field of the same name


def flag(default: Any = None, **meta: Any) -> Any:
    """A ``DistributeArgs`` field and its flag (a list default: a repeatable flag)."""
    if isinstance(default, list):
        return field(default_factory=list, metadata={"flag": Flag(**meta)})
    return field(default=default, metadata={"flag": Flag(**meta)})


@dataclass
class DistributeArgs:
    """The parsed flags; ``magic_args.spec_from_args`` turns them into a JobSpec."""

    help: bool = flag(False, short="-h", help=N_("show this help"))
    strategy: str | None = flag(
        short="-s", help=N_("strategy name (`%%ddl strategies` lists them)"), widget="choice"
    )
    replicas: int | None = flag(
        short="-n", help=N_("training replicas in total (see below)"), widget="int"
    )
    workers: int | None = flag(
        help=N_("Worker replicas (0 allowed for torch DDP: Master alone)"),
        widget="role",
        role="Worker",
    )
    ps: int | None = flag(
        help=N_("parameter servers (tf-parameter-server)"), widget="role", role="PS"
    )
    chief: int | None = flag(help=N_("Chief replicas (0 or 1)"), widget="role", role="Chief")
    evaluator: int | None = flag(
        help=N_("Evaluator replicas (0 or 1)"), widget="role", role="Evaluator"
    )
    gpus: int = flag(0, help=N_("GPUs per replica (1 replica x 1 GPU = 1 GPU)"), widget="int")
    tpus: int = flag(0, help=N_("TPU chips per replica (tf-tpu)"))
    cpu: str | None = flag(
        help=N_("CPU per replica, a Kubernetes quantity (2, 500m)"), widget="text"
    )
    memory: str | None = flag(
        help=N_("memory per replica, a Kubernetes quantity (4Gi)"), widget="text"
    )
    image: str | None = flag(
        help=N_("container image (Kubernetes)"), widget="text", kube_only=True, spec=True
    )
    backend: str | None = flag(
        short="-b", help=N_("local or kubernetes (default: the configured one)"), widget="choice"
    )
    namespace: str | None = flag(help=N_("Kubernetes namespace"), spec=True)
    name: str | None = flag(
        help=N_("job name (default: generated from the notebook)"), widget="text"
    )
    env: list[str] = flag([], metavar="K=V", help=N_("environment variable"))
    secret_env: list[str] = flag(
        [], metavar="K", help=N_("pass K from the kernel's environment, value never stored")
    )
    requirements: list[str] = flag(
        [], short="-r", help=N_("pip requirements: a file or comma-separated names")
    )
    gang: str | None = flag(
        choices=("volcano", "scheduler-plugins"), bare="volcano", help=N_("gang scheduling"),
        widget="check", kube_only=True,
    )  # fmt: skip
    queue: str | None = flag(
        help=N_("scheduler queue (implies --gang)"), widget="text", kube_only=True
    )
    priority: str | None = flag(help=N_("priority class (implies --gang)"))
    restart_policy: str | None = flag(help=N_("Never, OnFailure, ExitCode or Always"))
    backoff_limit: int | None = flag(help=N_("restarts before the job fails"), spec=True)
    nproc_per_node: int | None = flag(
        help=N_("torch processes per replica, under torchrun (default: its GPU count, at least 1)"),
        spec=True,
    )
    dist_backend: str | None = flag(
        choices=("gloo", "nccl", "mpi"), help=N_("torch process group backend"), spec=True
    )
    target: str | None = flag(
        choices=("trainjob",), help=N_("submit torch strategies as a Trainer v2 TrainJob")
    )
    dry_run: bool = flag(False, help=N_("print the captured script and the YAML; start nothing"))
    wait: bool = flag(False, help=N_("block until the job ends"))
    build_only: bool = flag(False, help=N_("build and push the image only (Kubernetes)"))
    timeout: float | None = flag(help=N_("with --wait: stop waiting after this many seconds"))


@dataclass(frozen=True)
class Declared:
    """One declared flag: its field, its value type and how it is written."""

    dest: str
    type: type  # of one value: str, int, float; bool for a switch
    repeatable: bool
    default: Any
    meta: Flag

    @property
    def option(self) -> str:
        return "--" + self.dest.replace("_", "-")

    @property
    def names(self) -> list[str]:
        if not self.meta.short:
            return [self.option]
        # -h first, as every command's help; the others long first
        return (
            [self.meta.short, self.option]
            if self.dest == "help"
            else [self.option, self.meta.short]
        )


def declared() -> list[Declared]:
    """Every flag, in declaration order (the order ``--help`` lists them)."""
    hints = typing.get_type_hints(DistributeArgs)
    out = []
    for f in dataclasses.fields(DistributeArgs):
        hint = hints[f.name]
        repeatable = typing.get_origin(hint) is list
        kinds = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
        kind = kinds[0] if not repeatable else str
        default = [] if repeatable else f.default
        out.append(Declared(f.name, kind, repeatable, default, f.metadata["flag"]))
    return out


def spec_copies() -> tuple[str, ...]:
    """The flags copied unchanged into the JobSpec field of the same name."""
    return tuple(d.dest for d in declared() if d.meta.spec)


def role_flags() -> dict[str, str]:
    """Role → the flag (field) that counts it: ``{"Worker": "workers", ...}``."""
    return {d.meta.role: d.dest for d in declared() if d.meta.role}


class RaisingParser(argparse.ArgumentParser):
    """argparse that raises ValidationError (one line naming what to do) instead of
    printing its usage and exiting the kernel; ``hint`` ends that line."""

    def __init__(self, *args: Any, hint: str, **kwargs: Any) -> None:
        kwargs.setdefault("add_help", False)
        kwargs.setdefault("exit_on_error", False)
        # `--worker 2` must not silently mean `--workers`: a flag added later would
        # change what stored notebooks mean.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.hint = hint

    def error(self, message: str) -> typing.NoReturn:
        raise ValidationError(f"{self.prog}: {argparse_words(message)}; {tr(self.hint)}")

    def parse_words(self, words: list[str]) -> argparse.Namespace:
        """Parse, then refuse a one-value flag given twice; ValidationError on both."""
        try:
            ns = self.parse_args(words)
        except argparse.ArgumentError as e:
            raise ValidationError(
                f"{self.prog}: {argparse_words(str(e))}; {tr(self.hint)}"
            ) from None
        check_repeats(self, words, self.prog)
        return ns


# argparse's own refusals (Python 3.10 to 3.13 word them so), in the learner's language
_ARGPARSE = [
    (re.compile(r"unrecognized arguments: (?P<words>.*)", re.S), N_("unrecognized arguments: {words}")),
    (re.compile(r"argument (?P<flag>\S+): invalid (?P<type>\w+) value: (?P<value>.*)", re.S), N_("argument {flag}: invalid {type} value: {value}")),
    (re.compile(r"argument (?P<flag>\S+): invalid choice: (?P<value>.*?) \(choose from (?P<choices>.*)\)", re.S), N_("argument {flag}: invalid choice: {value} (choose from {choices})")),
    (re.compile(r"argument (?P<flag>\S+): expected one argument", re.S), N_("argument {flag}: expected one argument")),
    (re.compile(r"the following arguments are required: (?P<words>.*)", re.S), N_("the following arguments are required: {words}")),
]  # fmt: skip


def argparse_words(message: str) -> str:
    """argparse's message in the current language (as it is when it is none we know)."""
    for pattern, said in _ARGPARSE:
        m = pattern.fullmatch(message)
        if m:
            return tr(said, **m.groupdict())
    return message


def check_repeats(parser: argparse.ArgumentParser, words: list[str], prog: str) -> None:
    """A flag that takes one value given twice (``--replicas 2 ... --replicas 3``) is
    refused: argparse would silently keep the last one."""
    seen: dict[str, str] = {}
    for word in words:
        if word == "--":
            break
        flag_word = word.split("=", 1)[0]
        action = parser._option_string_actions.get(flag_word)
        if action is None or isinstance(action, argparse._AppendAction):
            continue
        if action.dest in seen:
            said = tr(
                "{first} is given twice ({again} again); give it once",
                first=seen[action.dest], again=flag_word,
            )  # fmt: skip
            raise ValidationError(f"{prog}: {said}")
        seen[action.dest] = flag_word


def build_parser(epilog: str = "") -> RaisingParser:
    p = RaisingParser(
        prog="%%distribute",
        hint=N_("`%%distribute --help` lists the flags"),
        description=tr("Run this cell as a distributed training job."),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for d in declared():
        kw: dict[str, Any] = {"help": tr(d.meta.help), "dest": d.dest}
        if d.type is bool:
            kw["action"] = "store_true"
        elif d.repeatable:
            kw.update(action="append", default=[])
        else:
            kw.update(type=d.type, default=d.default)
        if d.meta.bare is not None:
            kw.update(nargs="?", const=d.meta.bare)
        if d.meta.choices:
            kw["choices"] = list(d.meta.choices)
        if d.meta.metavar:
            kw["metavar"] = d.meta.metavar
        p.add_argument(*d.names, **kw)
    return p


def flag_line(a: DistributeArgs, *, leave_out: tuple[str, ...] = ("name",)) -> str:
    """The ``%%distribute`` line that parses back into ``a``, but the fields left out
    (by default its name, which is the cell's own); defaults go unsaid."""
    words = ["%%distribute"]
    for d in declared():
        value = getattr(a, d.dest)
        if d.dest in leave_out or value is None or value == d.default:
            continue
        if d.type is bool:
            words.append(d.option)
            continue
        for one in value if d.repeatable else [value]:
            words += [d.option, shlex.quote(str(one))]
    return " ".join(words)


def flag_table() -> str:
    """README's flag table (markdown), one row per flag."""
    rows = ["| flag | value | default | what it does |", "|---|---|---|---|"]
    for d in declared():
        if d.dest == "help":
            continue
        names = ", ".join(f"`{n}`" for n in d.names)
        if d.type is bool:
            value = ""
        elif d.meta.choices:
            value = " \\| ".join(f"`{c}`" for c in d.meta.choices)
            value = f"[{value}]" if d.meta.bare else value
        else:
            value = d.meta.metavar or {int: "N", float: "S"}.get(d.type, "TEXT")
        if d.repeatable:
            value += " (repeatable)"
        shown = d.default is not None and d.type is not bool and not d.repeatable
        default = f"`{d.default}`" if shown else ""
        if d.meta.bare:
            default = f"`{d.meta.bare}` when bare"
        text = d.meta.help.replace("%%", "%").replace("|", "\\|")
        rows.append(f"| {names} | {value} | {default} | {text} |")
    return "\n".join(rows)


#: the markers around the generated table in README.md
TABLE_START = "<!-- %%distribute flags: generated by `python -m jupyter_ddl.notebook.flags` -->"
TABLE_END = "<!-- end of %%distribute flags -->"


def with_table(readme: str) -> str:
    """``readme`` with the text between the markers replaced by ``flag_table()``."""
    head, start, rest = readme.partition(TABLE_START)
    _, end, tail = rest.partition(TABLE_END)
    if not start or not end:
        raise ValueError("README.md lacks the %%distribute flag table markers")
    return f"{head}{start}\n{flag_table()}\n{end}{tail}"


if __name__ == "__main__":  # rewrite README.md's flag table in place
    import sys
    from pathlib import Path

    path = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    path.write_text(with_table(path.read_text(encoding="utf-8")), encoding="utf-8")
