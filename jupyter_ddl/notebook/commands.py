"""The ``%ddl`` line magic's subcommands, each a few lines over the job API."""

from __future__ import annotations

import argparse
import copy
import dataclasses
import shlex
import time
from typing import Any

from jupyter_ddl import i18n
from jupyter_ddl.config import Config, save_config
from jupyter_ddl.core.strategies import FRAMEWORKS, by_framework
from jupyter_ddl.errors import JobFailed, ValidationError
from jupyter_ddl.i18n import N_, tr
from jupyter_ddl.models import JobState, JobStatus
from jupyter_ddl.notebook.flags import RaisingParser
from jupyter_ddl.notebook.session import Session
from jupyter_ddl.present.clip import clip
from jupyter_ddl.present.state import DashboardState, format_start
from jupyter_ddl.present.text import (
    diagnosis_of,
    header_text,
    localized_message,
    pad,
    root_cause_text,
    state_word,
    table_text,
    width,
)

COMMANDS = (
    "list", "status", "attach", "logs", "cancel", "delete", "wait", "strategies", "config", "lang",
)  # fmt: skip


def usage() -> str:
    """``%ddl help``: the commands (code, the same in every language), then what NAME is."""
    return (
        "%ddl list | status [NAME] | attach [NAME] | logs [NAME] [--replica R] [--tail N] | "
        "cancel [NAME] | delete [NAME] | wait [NAME] [--timeout S] | strategies | "
        "config [key=value ...] | lang [en|ko|ja|zh-Hans|zh-Hant|auto]  ("
        + tr("NAME defaults to the job this kernel started last")
        + ")"
    )


def run_command(session: Session, line: str) -> Any:
    try:
        words = shlex.split(line)
    except ValueError as e:
        said = tr("cannot split {line!r} ({error}); check the quotes", line=line, error=e)
        raise ValidationError(f"%ddl: {said}") from None
    if not words or words[0] in ("help", "-h", "--help"):
        print(usage())
        return None
    command, rest = words[0], words[1:]
    if command not in COMMANDS:
        raise ValidationError(
            "%ddl: "
            + tr(
                "unknown command {command!r}; use one of: {commands}",
                command=command,
                commands=", ".join(COMMANDS),
            )
        )
    return _HANDLERS[command](session, rest)


#: the largest --tail (or other count) a %ddl command takes
MAX_FLAG_NUMBER = 10**9


def _named(
    session: Session, command: str, rest: list[str], *extra: tuple[str, type]
) -> argparse.Namespace:
    """Parse ``NAME [flags]``; without NAME, the job this kernel started last."""
    p = RaisingParser(prog=f"%ddl {command}", hint=N_("`%ddl help` lists the commands"))
    p.add_argument("name", nargs="?")
    for flag, kind in extra:
        p.add_argument(flag, type=kind)
    args = p.parse_words(rest)
    for flag, _ in extra:
        value = getattr(args, flag.lstrip("-"), None)
        if isinstance(value, (int, float)) and not 0 < value <= MAX_FLAG_NUMBER:  # also NaN
            shown = (
                f"{value:g}"
                if abs(value) < 10**15
                else tr("a {digits}-digit number", digits=len(str(value)))
            )
            said = tr("give a number above 0, at most {most}", most=MAX_FLAG_NUMBER)
            raise ValidationError(f"%ddl {command}: {flag} {shown}: {said}")
    if args.name is None:
        if session.last_job is None:
            said = tr("no job started in this kernel yet; give its NAME (`%ddl list`)")
            raise ValidationError(f"%ddl {command}: {said}")
        args.name = session.last_job
    return args


def status_text(status: JobStatus) -> str:
    """What the dashboard shows, as text: header (state, restarts against the backoff
    limit, notebook and cell), the root cause of a failure, the replica table."""
    state = DashboardState.of_status(status)
    parts = [header_text(state), root_cause_text(diagnosis_of(state)), table_text(state)]
    return "\n".join(p for p in parts if p)


def _list(session: Session, rest: list[str]) -> None:
    listing = session.manager.listing()
    _print_jobs(listing.jobs)
    for down in listing.unavailable:  # one line each: a backend down hides no other
        print(down.line)


_LIST_COLUMNS = (
    N_("name"), N_("backend"), N_("strategy"), N_("state"), N_("ready"), N_("started"), N_("age"),
    N_("from"),
)  # fmt: skip


def _print_jobs(jobs: list[JobStatus]) -> None:
    if not jobs:
        print(tr("no jobs yet; `%%distribute --strategy NAME` starts one"))
        return
    rows = [tuple(tr(c) for c in _LIST_COLUMNS)]
    now = time.time()
    for j in jobs:
        # a job file from a clock ahead of ours is not from the future: age 0
        age = tr("{n} min", n=f"{max(0.0, now - j.created) / 60:.0f}") if j.created else ""
        state = state_word(j.state.value)
        if j.message and j.message.startswith("unreadable: "):  # which file, not a guess
            state = j.message.split(" (", 1)[0].split(";", 1)[0]
        ready = f"{j.ready}/{len(j.replicas)}"
        started = format_start(j.started or j.created, now)
        rows.append((j.name, j.backend, j.strategy, state, ready, started, age, _origin(j)))
    widths = [max(width(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(pad(c, w) for c, w in zip(r, widths, strict=True)).rstrip())


def _origin(job: JobStatus) -> str:
    """``train.ipynb · cell 3f2a9c1d``: the notebook and cell a job came from."""
    parts = [job.notebook.rsplit("/", 1)[-1] if job.notebook else ""]
    parts.append(f"cell {job.cell_id[:8]}" if job.cell_id else "")
    return " · ".join(p for p in parts if p)


def _status(session: Session, rest: list[str]) -> None:
    a = _named(session, "status", rest)
    print(status_text(session.manager.get(a.name)))


def _attach(session: Session, rest: list[str]) -> None:
    a = _named(session, "attach", rest)
    session.manager.get(a.name)  # JobNotFound before any output
    session.follow(a.name)


def _logs(session: Session, rest: list[str]) -> None:
    """The job's lines; without --tail at most ``logs_max_lines`` of them, then one
    line saying where the rest is (a big log must not flood the notebook)."""
    a = _named(session, "logs", rest, ("--replica", str), ("--tail", int))
    limit = None if a.tail is not None else session.manager.config.logs_max_lines
    for shown, line in enumerate(session.manager.logs(a.name, replica=a.replica, tail=a.tail)):
        if limit is not None and shown >= limit:
            print(_rest_of_log(session, a.name, a.replica, limit))
            return
        print(
            f"[{line.replica}] {clip(line.text, whole=_where_whole(session, a.name, line.replica))}"
        )


def _where_whole(session: Session, name: str, replica: str) -> str:
    """Where a cut line is whole: the replica's log file (local), else its pod log."""
    job_dir = getattr(session.manager.find(name), "job_dir", None)
    if job_dir is not None:
        return f"the whole line is in {job_dir(name) / 'logs' / f'{replica}.log'}"
    return f"the whole line is in the log of {replica} (`kubectl logs`)"


def _rest_of_log(session: Session, name: str, replica: str | None, shown: int) -> str:
    where = ""
    found = session.manager.find(name)
    job_dir = getattr(found, "job_dir", None)
    if job_dir is not None:
        logs = job_dir(name) / "logs"
        where = f"; every line is in {logs / f'{replica}.log' if replica else logs}"
    one = f" --replica {replica}" if replica else ""
    return (
        f"[jupyter-ddl] the first {shown} lines are shown (logs_max_lines), more follow: "
        f"`%ddl logs {name}{one} --tail N` shows the last N{where}"
    )


def _cancel(session: Session, rest: list[str]) -> None:
    a = _named(session, "cancel", rest)
    status = session.manager.cancel(a.name)
    print(f"{a.name}: {status.state.value}")


def _delete(session: Session, rest: list[str]) -> None:
    a = _named(session, "delete", rest)
    session.forget(a.name)
    session.manager.delete(a.name)
    print(f"{a.name}: deleted")


def _wait(session: Session, rest: list[str]) -> None:
    a = _named(session, "wait", rest, ("--timeout", float))
    dash = session.dashboards.get(a.name)
    if dash is not None and dash.running:
        session.wait_for(dash, a.timeout)  # also writes the dashboard's final output
        if dash.running:
            return
    status = session.manager.wait(a.name, timeout=a.timeout)
    print(status_text(status))
    if status.state == JobState.FAILED:
        root = diagnosis_of(DashboardState.of_status(status))
        message = localized_message(status.message, root)
        raise JobFailed.of(a.name, message, root.root if root else None)


def _strategies(session: Session, rest: list[str]) -> None:
    groups = by_framework()
    for framework in FRAMEWORKS:
        print(f"{framework}:")
        for s in groups[framework]:
            roles = ", ".join(f"{r.role} {r.describe()}" for r in s.roles)
            print(f"  {s.name:<26} {s.summary}")
            print(f"  {'':<26} roles: {roles}; kind: {s.kind}")


def _config(session: Session, rest: list[str]) -> None:
    cfg: Config = session.manager.config
    trial = copy.deepcopy(cfg)  # all or nothing: one bad item changes no key
    for item in rest:
        key, sep, value = item.partition("=")
        if not sep:
            said = tr("{item!r} is not key=value; write e.g. log_tail=500", item=item)
            raise ValidationError(f"%ddl config: {said}")
        trial.set(key, value)  # one line naming the key and what it takes
    if rest:
        for f in dataclasses.fields(cfg):
            setattr(cfg, f.name, getattr(trial, f.name))
        save_config(cfg)
        i18n.configure(i18n.normalize(cfg.language) if cfg.language else None)
    for key, value in sorted(cfg.to_dict().items()):
        print(f"{key} = {value!r}")


def _lang(session: Session, rest: list[str]) -> None:
    """``%ddl lang ko``: this kernel's messages in Korean (``auto``: back to the config's
    ``language``, else the kernel's locale); without a code, the language now."""
    if len(rest) > 1:
        raise ValidationError(
            tr("%ddl lang: give one language ({codes}) or auto", codes=", ".join(i18n.LANGUAGES))
        )
    if rest:
        code = None if rest[0] == "auto" else i18n.normalize(rest[0])
        if code is None and rest[0] != "auto":
            raise ValidationError(
                tr(
                    "%ddl lang: {value!r} is no language shipped; give one of {codes} or auto",
                    value=rest[0],
                    codes=", ".join(i18n.LANGUAGES),
                )
            )
        i18n.choose(code)
    print(tr("language: {code}", code=i18n.language()))


_HANDLERS = {
    "list": _list,
    "status": _status,
    "attach": _attach,
    "logs": _logs,
    "cancel": _cancel,
    "delete": _delete,
    "wait": _wait,
    "strategies": _strategies,
    "config": _config,
    "lang": _lang,
}
