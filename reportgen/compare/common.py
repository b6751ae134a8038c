"""What the comparison sections share: deltas (always B − A), their printed sign, the statistics shown."""

from __future__ import annotations

from reportgen.formatting import exact_number
from reportgen.report.model import Shown
from reportgen.report.util import number
from reportgen.section_ids import SectionId

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


def job_cpu(sections: dict) -> dict | None:
    """A `reportgen record` run on a shared host: the recorded command's own CPU (``p50``, ``p95``: % of the
    host's cores), which ``generate`` judges the run by; None otherwise (the host's CPU is the job's).
    ``sections``: a run's section data by id (its report.json's ``sections``)."""
    usage = (sections or {}).get(SectionId.SYSTEM_USAGE_STATISTICS)
    command = usage.get("recorded_command") if isinstance(usage, dict) else None
    if not isinstance(command, dict) or command.get("host_shared") is not True:
        return None
    p50, p95 = number(command.get("job_cpu_pct_of_host_p50")), number(command.get("job_cpu_pct_of_host_p95"))
    return {"p50": p50, "p95": p95} if p95 is not None else None
