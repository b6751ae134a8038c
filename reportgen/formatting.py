"""How numbers and times are written in the report (one place, so tables and texts agree)."""

from __future__ import annotations

import math
from datetime import datetime, timezone

from reportgen.json_values import is_plain_number


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


def cell_parts(value, fmt: str) -> tuple[str, str | None, str | None]:
    """(text shown, exact value or None, SageMaker's printed text or None) of a table cell.

    The exact value (the cell's ``data-value``) is there whenever the text rounds or reformats the
    value: "596.3 MB/s" keeps "596310691.3912" (full precision, the column's unit), "12.35" keeps
    "12.3456". SageMaker's printed text (``data-sagemaker``) is there where it differs from the text
    shown: the fidelity tests compare it with the original report. A ``Shown`` value (duck-typed: it
    has ``text`` and ``exact``, optionally ``sagemaker``) brings its own."""
    if hasattr(value, "text") and hasattr(value, "exact"):
        exact, printed = value.exact, getattr(value, "sagemaker", None)
        return (str(value.text), None if exact is None else str(exact),
                None if printed is None else str(printed))
    humane = HUMANE.get(fmt)
    if fmt == "params" and isinstance(value, str):
        shown = inline_params(value)  # the same text laid out on one line: SageMaker's layout kept aside
        return shown, None, (value if shown != value else None)
    if humane is not None and is_plain_number(value) and math.isfinite(value):
        show, printed_fmt = humane
        printed = _plain_cell(value, printed_fmt) if fmt in SAGEMAKER_PRINTED else None
        return show(value), exact_number(value), printed
    fmt = "num2" if humane else fmt
    text = _plain_cell(value, fmt)
    return text, (_rounded_exact(value, fmt) if is_plain_number(value) else None), None


def exact_number(value) -> str | None:
    """A number in full precision (the shortest text that reads back as the same float; an int as
    it is); None for a non-number or a non-finite float."""
    if not is_plain_number(value):
        return None
    if isinstance(value, int):
        return str(value)
    return repr(float(value)) if math.isfinite(value) else None


def _rounded_exact(value, fmt: str) -> str | None:
    """The exact value of a plain number cell whose text rounds it ("12.35" for 12.3456), else None."""
    if fmt not in ("num2", "pct", "int") or isinstance(value, int) or not math.isfinite(value):
        return None
    shown = float(num2(value)) if fmt != "int" else float(int(value))
    return None if shown == float(value) else exact_number(value)


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


def binary_bytes(value) -> str:
    """4194304 -> '4.0 MiB' (binary units, as allocators and GPU memory are counted); '?' for no number."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024.0
    return f"{value:.1f} GiB"


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


# Humane column formats: (shown text, format of the text SageMaker's report printed).
HUMANE = {
    "params": (inline_params, "text"),
    "bytes_s": (human_rate, "num2"),
    "us": (lambda us: human_duration(us / 1e6), "int"),
    "pct1": (pct1, "num2"),
}
# The humane formats used in SageMaker's own tables: their cells carry its printed text in data-sagemaker.
SAGEMAKER_PRINTED = {"us"}


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
