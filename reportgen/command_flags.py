"""What a recorded command line says through its flags (``--batch-size 64``, ``--steps=320``): the one reading of
``recording.json``'s command that the batch size and the steps of a run both use (compare's work per run, and the
diagnosis's steps after a profiled window: the profiler's cost per step with one profiling cycle)."""

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


STEPS_FLAG = re.compile(r"--(?:steps|(?:max|num|train|total)[-_]steps)", re.IGNORECASE)
EPOCHS_FLAG = re.compile(r"--(?:epochs?|(?:num|max|train)[-_](?:train[-_])?epochs)", re.IGNORECASE)
MAX_STEPS = 1e12  # more steps than this is damage, not work


def steps_of_command(command: object) -> tuple[int, str] | None:
    """(steps, ``--steps 320``) from a recorded command line (``--steps 320`` or ``--steps=320``); None when it
    gives none, several that differ, or also names epochs."""
    if flag_values(command, EPOCHS_FLAG):
        return None
    found: dict[int, str] = {}
    for flag, value in flag_values(command, STEPS_FLAG):
        value = value.strip()
        if value.isdigit() and 0 < int(value) <= MAX_STEPS:
            found.setdefault(int(value), f"{flag} {int(value)}")
    return next(iter(found.items())) if len(found) == 1 else None
