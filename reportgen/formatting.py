"""How numbers and times are written in the report (one place, so tables and texts agree)."""

from __future__ import annotations

import math
from datetime import datetime, timezone


def utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def timestamp(seconds: float) -> str:
    """``HH:MM:SS MM/DD/YYYY`` in UTC, as the original report prints times."""
    return utc(seconds).strftime("%H:%M:%S %m/%d/%Y")


def day_and_hour(seconds: float) -> tuple[str, str]:
    moment = utc(seconds)
    return moment.strftime("%m/%d/%Y"), moment.strftime("%H:%M:%S")


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


def human_duration(seconds) -> str:
    """Rounded to whole seconds, as ``1 h 5 min``, ``6 min 39 s`` or ``9 s``."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        return ""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"
