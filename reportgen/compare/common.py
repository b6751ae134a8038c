"""What the comparison sections share: deltas (always B − A), their printed sign, the statistics shown."""

from __future__ import annotations

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
