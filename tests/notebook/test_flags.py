"""``%%distribute`` flags are declared once (jupyter_ddl/notebook/flags.py): the parser, the
spec's plain copies, README's table and what the lab dialog writes all follow them."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from jupyter_ddl.errors import ValidationError
from jupyter_ddl.models import JobSpec
from jupyter_ddl.notebook.args import help_text, parse_line, spec_from_args
from jupyter_ddl.notebook.flags import (
    TABLE_END,
    TABLE_START,
    DistributeArgs,
    build_parser,
    declared,
    role_flags,
    spec_copies,
    with_table,
)

REPO = Path(__file__).resolve().parents[2]


def test_the_parser_accepts_exactly_the_declared_flags():
    parser = build_parser()
    written = {s for a in parser._actions for s in a.option_strings}
    assert written == {n for d in declared() for n in d.names}
    assert {a.dest for a in parser._actions} == {f.name for f in dataclasses.fields(DistributeArgs)}
    # and what it parses builds the dataclass, defaults included
    assert parse_line("") == DistributeArgs()
    with pytest.raises(ValidationError, match="unrecognized arguments: --worker"):
        parse_line("--worker 2")  # no abbreviations


def test_every_declared_flag_reaches_the_args():
    line = (
        "-s torch-ddp -n 3 --workers 2 --gpus 1 --cpu 2 --memory 4Gi --image img:1 -b local "
        "--namespace ns --name j --env A=1 --env B=2 --secret-env S -r numpy --gang --queue q "
        "--priority p --restart-policy OnFailure --backoff-limit 4 --nproc-per-node 2 "
        "--dist-backend gloo --target trainjob --dry-run --build-only"
    )
    a = parse_line(line)
    assert (a.strategy, a.replicas, a.workers, a.gpus, a.cpu, a.memory) == (
        "torch-ddp", 3, 2, 1, "2", "4Gi",
    )  # fmt: skip
    assert (a.env, a.secret_env, a.requirements, a.gang) == (
        ["A=1", "B=2"],
        ["S"],
        ["numpy"],
        "volcano",
    )
    assert (a.backoff_limit, a.nproc_per_node, a.dist_backend, a.target) == (
        4,
        2,
        "gloo",
        "trainjob",
    )
    assert a.dry_run and a.build_only and not a.wait and not a.help


def test_plain_copies_land_in_the_spec_field_of_their_name():
    spec_fields = {f.name for f in dataclasses.fields(JobSpec)}
    assert set(spec_copies()) <= spec_fields
    assert set(spec_copies()) == {
        "image",
        "namespace",
        "backoff_limit",
        "nproc_per_node",
        "dist_backend",
    }
    a = parse_line(
        "--strategy torch-ddp --image img:1 --namespace ns --backoff-limit 4 "
        "--nproc-per-node 2 --dist-backend gloo"
    )
    spec = spec_from_args(a, name="j", backend="kubernetes")
    assert [getattr(spec, k) for k in spec_copies()] == ["img:1", "ns", 4, 2, "gloo"]


def test_role_flags_name_roles_the_catalog_knows():
    from jupyter_ddl.core.kinds import ROLES

    assert role_flags() == {
        "Worker": "workers",
        "PS": "ps",
        "Chief": "chief",
        "Evaluator": "evaluator",
    }
    assert set(role_flags()) <= set(ROLES)
    with pytest.raises(ValidationError, match="--ps: torch-ddp has no PS role"):
        spec_from_args(parse_line("-s torch-ddp --ps 1"), name="j", backend="local")


def test_help_lists_every_flag_with_its_help():
    text = help_text()
    for d in declared():
        assert d.option in text
    assert "--replicas N counts the replicas that train" in text


def test_the_readme_flag_table_is_current():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert TABLE_START in readme and TABLE_END in readme
    assert with_table(readme) == readme, "run `python -m jupyter_ddl.notebook.flags README.md`"
    table = readme.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0]
    rows = [r for r in table.splitlines() if r.startswith("| `")]
    assert len(rows) == len(declared()) - 1  # every flag but --help


def test_the_lab_dialog_writes_declared_flags_only():
    """The "Distribute this cell" dialog writes and reads some flags by name."""
    source = (REPO / "labextension" / "src" / "pure" / "flags.ts").read_text(encoding="utf-8")
    used = set(re.findall(r"['`](--?[a-z][a-z-]*)\b", source))
    assert {"--strategy", "--replicas", "--gpus", "--backend"} <= used
    known = {n for d in declared() for n in d.names}
    assert used <= known, used - known


def test_flag_line_parses_back_into_the_same_args_but_the_name():
    from jupyter_ddl.notebook.flags import flag_line

    line = (
        "-s tf-parameter-server -n 3 --ps 2 --gpus 1 --cpu 2 -b kubernetes --image 'my img' "
        "--env A=1 --env 'B=two words' --gang scheduler-plugins --wait --timeout 5 --name x"
    )
    a = parse_line(line)
    written = flag_line(a)
    assert written.startswith("%%distribute --strategy tf-parameter-server --replicas 3")
    assert "--name" not in written and "--tpus" not in written  # left out, default
    assert parse_line(written.removeprefix("%%distribute ")) == dataclasses.replace(a, name=None)
