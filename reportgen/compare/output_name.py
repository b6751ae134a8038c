"""Which file a page of ``compare`` or ``trend`` goes to, so that one format never writes over another's file.

Without ``-o`` the page is named for its format (``compare.html`` or ``compare.md``); an ``-o`` whose suffix
names the other format (``-o compare.html --format md``) is refused before any work, as writing Markdown
into ``compare.html`` replaced the page a user had made a moment before. Other names (``.txt``, no suffix,
``-`` for standard output, a device) are taken as given.
"""

from __future__ import annotations

from pathlib import Path

from reportgen.errors import InputError
from reportgen.output_set import is_stdout

SUFFIXES = {"html": (".html", ".htm", ".xhtml"), "md": (".md", ".markdown", ".mdown")}
NAMES = {"html": "HTML", "md": "Markdown"}


def page_path(output, fmt: str, stem: str):
    """``output`` (None: not given) checked against ``fmt``; the default is ``stem`` with the format's suffix."""
    if output is None:
        return Path(f"{stem}{SUFFIXES[fmt][0]}")
    if is_stdout(output):
        return output
    suffix = Path(output).suffix.lower()
    for other, suffixes in SUFFIXES.items():
        if other != fmt and suffix in suffixes:
            raise InputError(f"-o {output}: --format {fmt} writes {NAMES[fmt]}, and this name is for {NAMES[other]}; "
                             f"give a {SUFFIXES[fmt][0]} name (or leave -o out: {stem}{SUFFIXES[fmt][0]})")
    return Path(output)
