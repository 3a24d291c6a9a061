"""Imported at interpreter start-up when this folder is on PYTHONPATH: the top-level
modules named in ``JUPYTER_DDL_TEST_BLOCK`` (comma-separated) become unimportable, as
in an environment that lacks them. Used at the process boundary (a kernel, a server),
never inside the test process."""

from __future__ import annotations

import os
import sys


class _Blocked:
    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        if fullname.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


_names = {n for n in os.environ.get("JUPYTER_DDL_TEST_BLOCK", "").split(",") if n}
if _names:
    sys.meta_path.insert(0, _Blocked(_names))
