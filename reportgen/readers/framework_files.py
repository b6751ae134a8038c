"""Which framework traces a raw profile holds, and their file-name times, without the reader.

Listing them is the first thing ``analyze`` does (the clock-jump span needs their times before any file is
read); kept apart from ``readers.framework`` so that the listing does not import pandas: pandas is then
imported by the traces thread while DuckDB already reads the system metrics, not before it starts.
"""

from __future__ import annotations

from pathlib import Path

from reportgen.problems import ProblemLog
from reportgen.readers.listing import walk_files
from reportgen.sources.layout import is_framework_trace


def list_framework_files(root: Path, problems: ProblemLog | None = None) -> list[Path]:
    """Trace files under framework/, in file-name time order; a folder that cannot be listed is
    recorded in ``problems`` (see ``listing.walk_files``)."""
    fw = root / "framework"
    if not fw.is_dir():
        return []
    out = [p for p in walk_files(fw, root, problems) if p.is_file() and is_framework_trace(p.parts)]
    return sorted(out, key=lambda p: (file_key_us(p), str(p)))


def file_key_us(p: Path) -> int:
    head = p.name.split("_")[0]
    return int(head) if head.isdigit() else 0
