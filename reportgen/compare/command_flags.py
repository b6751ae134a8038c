"""What a recorded command line says through its flags (``--batch-size 64``, ``--steps=320``): the one reading of
``recording.json``'s command that the batch size and the steps of a run both use."""

from __future__ import annotations

import re


def flag_values(command: object, flag: re.Pattern[str]) -> list[tuple[str, str]]:
    """(flag as written, its value) for every argument of ``command`` that ``flag`` matches whole, as
    ``--name value`` or ``--name=value`` (a flag last on the line has the value ""); [] for no command line."""
    if not isinstance(command, list):
        return []
    args = [a for a in command if isinstance(a, str)]
    found = []
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if flag.fullmatch(name):
            found.append((name, value if eq else args[i + 1] if i + 1 < len(args) else ""))
    return found
