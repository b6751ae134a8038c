"""How numbers and times are written in the report (one place, so tables and texts agree)."""

from __future__ import annotations

import math
from datetime import datetime, timezone


def utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def timestamp(seconds: float) -> str:
    """``HH:MM:SS MM/DD/YYYY`` in UTC, as the original report prints times."""
    return utc(seconds).strftime("%H:%M:%S %m/%d/%Y")


def iso_utc(seconds: float) -> str:
    """``YYYY-MM-DD HH:MM:SS UTC``: how the report shows a moment (ISO-like, the zone stated)."""
    return utc(seconds).strftime("%Y-%m-%d %H:%M:%S UTC")


def num2(value) -> str:
    """Two decimals; non-finite values are spelled out instead of crashing."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if not math.isfinite(value):
        return "n/a"
    return f"{value:.2f}"


def format_cell(value, fmt: str) -> str:
    """The text of a table cell (the humane text for a humane format; see ``cell_parts``)."""
    return cell_parts(value, fmt)[0]


def cell_parts(value, fmt: str) -> tuple[str, str | None]:
    """(text shown, exact text or None): a humane format shows e.g. "596.3 MB/s" and keeps the
    original's exact "596310691.39" for the cell's ``data-value``. A ``Shown`` value (duck-typed: it
    has ``text`` and ``exact``) brings both."""
    if hasattr(value, "text") and hasattr(value, "exact"):
        return str(value.text), (None if value.exact is None else str(value.exact))
    humane = HUMANE.get(fmt)
    if fmt == "params" and isinstance(value, str):
        shown = inline_params(value)
        return shown, (value if shown != value else None)
    if humane is not None and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        show, exact_fmt = humane
        return show(value), _plain_cell(value, exact_fmt)
    return _plain_cell(value, "num2" if humane else fmt), None


def _plain_cell(value, fmt: str) -> str:
    if value is None:
        return ""
    if fmt == "num2":
        return num2(value)
    if fmt == "int":
        return str(int(value)) if isinstance(value, (int, float)) and math.isfinite(value) else str(value)
    if fmt == "pct":
        return f"{num2(value)} %"
    return str(value)


def human_bytes(value: float) -> str:
    """1536 -> '1.5 KB' (decimal units, as cloud consoles show throughput)."""
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "n/a"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(value) < 1000 or unit == "TB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{value:.0f} B"
        value /= 1000.0
    return f"{value:.1f} TB"


def human_rate(bytes_per_second: float) -> str:
    """596310691.39 -> '596.3 MB/s' (decimal units, as cloud consoles show throughput)."""
    return human_bytes(bytes_per_second) + "/s"


def human_duration(seconds) -> str:
    """A duration in the unit that fits: '850 µs', '12.3 ms', '4.56 s', '39 s', '6 min 39 s', '1 h 5 min'
    (whole seconds from 10 s on); empty for a non-number."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        return ""
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    if seconds == 0:
        return "0 s"
    if seconds < 1e-3:
        return f"{sign}{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{sign}{seconds * 1e3:.3g} ms"
    if seconds < 10:
        return f"{sign}{seconds:.3g} s"
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{sign}{hours} h {minutes} min"
    return f"{sign}{minutes} min {secs} s" if minutes else f"{sign}{secs} s"


def pct1(value: float) -> str:
    """A share as the report shows it where a table and a chart show the same quantity: one decimal."""
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "n/a"
    return f"{value:.1f} %"


def inline_params(text: str) -> str:
    """Rule parameters, one "name:value" a line in the original, on one wrapping line."""
    return ", ".join(line.replace(":", ": ", 1) for line in str(text).splitlines() if line.strip())


# Humane column formats: (shown text, format of the exact value kept in data-value).
HUMANE = {
    "params": (inline_params, "text"),
    "bytes_s": (human_rate, "num2"),
    "us": (lambda us: human_duration(us / 1e6), "int"),
    "pct1": (pct1, "num2"),
}


def money_text(value, currency: str = "USD", digits: int = 2, *, grouping: bool = True) -> str:
    """An amount in the price table's currency: ``$1,234.50`` for USD, ``1,234.50 EUR`` for any other (a
    ``--prices`` file in euros was shown with a dollar sign); empty for a non-number. ``grouping=False``: no
    thousands separator (the cost tables never had one: their outputs stay the same)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return ""
    currency = str(currency or "USD").strip() or "USD"
    scale = 10 ** digits
    rounded = math.floor(value * scale + 0.5) / scale  # half up, as costs are printed
    below = 0 < value and rounded == 0  # above zero, rounds to nothing: "< $0.01" (a short run is not free)
    value = 1 / scale if below else rounded
    number = f"{value:,.{digits}f}" if grouping else f"{value:.{digits}f}"
    return ("< " if below else "") + (f"${number}" if currency.upper() == "USD" else f"{number} {currency}")
