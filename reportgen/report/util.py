"""Small defensive accessors: rule outputs from other tools may be partial or odd."""

from __future__ import annotations

import math
import re


def as_dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def as_list(value) -> list:
    return value if isinstance(value, list) else []


def number(value, default=None):
    """A finite float, or ``default`` for anything else (strings, NaN, bools, None, an integer of 400 digits)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    try:
        value = float(value)
    except OverflowError:  # an int beyond float range, as JSON can hold
        return default
    return value if math.isfinite(value) else default


def numeric_items(mapping) -> dict:
    """Only the entries whose values are finite numbers."""
    return {k: float(v) for k, v in as_dict(mapping).items() if number(v) is not None}


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
