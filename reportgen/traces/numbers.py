"""Number and identity checks every trace reader applies to an event's fields.

JSON gives more than times and ids: NaN and Infinity parse, an integer of 400 digits parses (and
``math.isfinite`` raises on it), a pid may be a list. These checks say what counts.
"""

from __future__ import annotations

import json
import sys

FLOAT_MAX = sys.float_info.max


def is_number(x) -> bool:
    """A finite int or float that a float can hold (a bool is no number)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and -FLOAT_MAX <= x <= FLOAT_MAX


def as_float(x, *, text: bool = False) -> float | None:
    """``x`` as a finite float, None when it is none; ``text``: a numeric string counts too."""
    if is_number(x):
        return float(x)
    if text and isinstance(x, str):
        try:
            number = float(x)
        except ValueError:
            return None
        return number if -FLOAT_MAX <= number <= FLOAT_MAX else None
    return None


def hashable(value):
    """A pid/tid usable as a dict key (a list or object in the data becomes its JSON text)."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    return json.dumps(value, sort_keys=True, default=str)
