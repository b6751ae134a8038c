"""What the comparison sections share: deltas (always B − A), their printed sign, the statistics shown."""

from __future__ import annotations

from reportgen.formatting import exact_number
from reportgen.report.model import Shown
from reportgen.report.util import number

STATS = ("max", "p99", "p95", "p90", "p50", "min")
SHOWN_STATS = ("p50", "p95", "max")


def delta(a, b):
    a, b = number(a), number(b)
    return None if a is None or b is None else b - a


def signed(value, digits: int = 2) -> str | None:
    """A delta as printed: +1.50 / −1.50 / 0.00 (None stays empty)."""
    if value is None:
        return None
    text = f"{abs(value):.{digits}f}"
    if float(text) == 0:
        return text
    return ("+" if value > 0 else "\u2212") + text


def signed_cell(value, digits: int = 2):
    """A delta for a table cell: printed as ``signed`` shows it, the exact value kept in data-value when
    the text rounds it."""
    text = signed(value, digits)
    if text is None or float(text.replace("\u2212", "-")) == value:
        return text
    return Shown(text, exact_number(value))
