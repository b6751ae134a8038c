"""Walking a profile's folders without losing a folder silently.

``Path.rglob`` skips a folder it cannot list (mode 000, another user's ``<hour>/`` folder) without a
word, and the files in it would vanish from the report with Data quality saying nothing. The
readers list through ``walk_files`` instead, which records each such folder as a problem.
"""

from __future__ import annotations

import os
from pathlib import Path

from reportgen.problems import ProblemLog

UNREADABLE_FOLDER = "unreadable folder"


def walk_files(top: Path, root: Path, problems: ProblemLog | None):
    """Every file name under ``top`` (symlinked folders not followed, so a link loop is read once),
    each folder that cannot be listed recorded in ``problems`` (``unreadable folder: <reason>``)."""
    def failed(err: OSError) -> None:
        if problems is not None:
            where = Path(err.filename) if err.filename else top
            try:
                rel = str(where.relative_to(root))
            except ValueError:
                rel = str(where)
            problems.add(rel, None, f"{UNREADABLE_FOLDER}: {err.strerror or err}")

    for folder, dirs, names in os.walk(top, onerror=failed):
        dirs.sort()
        for name in sorted(names):
            yield Path(folder) / name
