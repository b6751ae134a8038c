"""Small defensive accessors: rule outputs from other tools may be partial or odd."""

from __future__ import annotations

import math
import re

from reportgen.json_values import as_items, as_object, finite

# The report's names for the JSON-value guards (reportgen/json_values.py): one set for every room.
as_dict = as_object
as_list = as_items


def number(value, default=None):
    """A finite float, or ``default`` for anything else (strings, NaN, bools, None, an integer of 400 digits)."""
    found = finite(value)
    return default if found is None else found


def slug(text: str) -> str:
    """An HTML-id-safe form of a data string (node names come from user code)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text)).strip("-")
    return cleaned or "x"


def pct_text(value) -> str:
    """A percentage in a sentence: one decimal at most (16.049999999999955 -> '16 %', 74.25 -> '74.2 %');
    tables keep the exact value."""
    value = number(value)
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{round(value, 1):g} %"


def int_pct(value) -> int:
    """The original prints many percentages with int() truncation; keep that for texts."""
    value = number(value, 0.0)
    return int(value)
