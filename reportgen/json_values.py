"""The guards every typed view applies to a JSON value: is it a number a float holds, an object, a list, text.

reportgen reads JSON that something else may have written (a rule output of another tool, a kineto.json of an
older version): NaN and Infinity parse, an integer of 400 digits parses (``math.isfinite`` raises on it), a bool
is an int to Python, an object may be a list. One module says what counts, so every view reads alike.
"""

from __future__ import annotations

import sys
from typing import Any, TypeGuard

FLOAT_MAX = sys.float_info.max


def given(value: object) -> float | None:
    """A number as given (an int stays an int, so outputs do not move); None for anything no float holds: a
    bool, NaN, an infinity, an integer of 400 digits, text."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if -FLOAT_MAX <= value <= FLOAT_MAX else None  # NaN fails both comparisons


def is_finite(value: object) -> TypeGuard[float]:
    """Whether the value is a number a float holds (``given`` is not None); a type checker then knows it is one."""
    return given(value) is not None


def finite(value: object) -> float | None:
    """The number as a float, None for anything no float holds (as ``given``)."""
    number = given(value)
    return None if number is None else float(number)


def is_plain_number(value: object) -> bool:
    """An int or a float, a bool not (finite or not: for readers that check the range themselves)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def as_object(value: object) -> dict[Any, Any]:
    """The value when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_items(value: object) -> list[Any]:
    """The value when it is a JSON list, else an empty one."""
    return value if isinstance(value, list) else []


def text(value: object) -> str | None:
    """The value when it is text, else None."""
    return value if isinstance(value, str) else None
