"""Secrets of the kernel that a captured cell would ship in plain text (pure).

A value read from the kernel's environment into a notebook variable (``tok = %env
GITHUB_TOKEN``, ``tok = os.environ[...]``) is recreated in the job's code as a literal:
in the bundled ``cell.py``, the ``--dry-run`` script (so the saved notebook), the
ConfigMap and the image layer. A captured script that holds the value of a kernel
variable whose name looks secret is refused; ``--secret-env NAME`` hands the variable
to the replicas without writing it anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from jupyter_ddl.errors import CaptureError
from jupyter_ddl.i18n import tr

# names of credentials, not of where they are kept (SSH_KEY_PATH, TOKEN_FILE)
_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|"
    r"AUTH|COOKIE|SESSION_?KEY|_KEY$|^KEY$|_PASS$|_PWD$)",
    re.IGNORECASE,
)
_NOT_SECRET = re.compile(r"(_PATH|_FILE|_DIR|_URL|_HOST|_ENDPOINT|_REGION|_ID)$", re.IGNORECASE)
MIN_LENGTH = 8  # shorter values ("1", "true") match code by chance


def looks_secret(name: str) -> bool:
    return bool(_SECRET_NAME.search(name)) and not _NOT_SECRET.search(name)


def secret_values(environ: Mapping[str, str]) -> dict[str, str]:
    """value -> name for the variables of ``environ`` that look secret."""
    return {
        v: k for k, v in sorted(environ.items()) if looks_secret(k) and len(v.strip()) >= MIN_LENGTH
    }


def refuse_secrets(code: str, environ: Mapping[str, str], where: Mapping[str, str]) -> None:
    """Raise CaptureError when ``code`` holds the value of a secret-looking variable of
    ``environ``; ``where``: the source text of each captured name, to say which one."""
    for value, var in secret_values(environ).items():
        if value not in code:
            continue
        holders = sorted(n for n, text in where.items() if value in text)
        if holders:
            raise CaptureError(
                tr(
                    "`{holder}` holds the value of the kernel's {var}, which would ship in "
                    "plain text with the job; pass it with `--secret-env {var}` and read "
                    "os.environ[{key!r}] in the cell",
                    holder=holders[0], var=var, key=var,
                )
            )  # fmt: skip
        raise CaptureError(
            tr(
                "the job's code holds the value of the kernel's {var}, which would ship in plain "
                "text with the job; pass it with `--secret-env {var}` and read "
                "os.environ[{key!r}] in the cell",
                var=var, key=var,
            )
        )  # fmt: skip
