"""One bounded line (pure): a line longer than a surface can show is cut, and a marker
says how much was cut and where the whole line is. A single 10 MB ``print`` must not
send 10 MB to the cell, the saved record, ``%ddl logs`` or a REST answer."""

from __future__ import annotations

from jupyter_ddl.i18n import tr

#: characters of one log line a surface shows
MAX_LINE = 4000
#: characters of a status message a surface shows
MAX_MESSAGE = 8000


def clip(text: str, limit: int = MAX_LINE, whole: str = "") -> str:
    """``text``, or its first ``limit`` characters and a marker: ``… [9,996,000 more
    characters cut; <whole>]``."""
    if len(text) <= limit:
        return text
    where = f"; {whole}" if whole else ""
    cut = tr("{n} more characters cut", n=f"{len(text) - limit:,}")
    return f"{text[:limit]} … [{cut}{where}]"
