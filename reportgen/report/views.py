"""Typed views of the section data that other rooms read (compare, the report's own cost section).

A section's ``data`` stays the plain dict report.json is made of (its keys and numbers exactly as
SageMaker's rule outputs give them); a view is the frozen, typed reading of the fields that more than
one room uses, so a renamed key fails in one place instead of reading ``None`` everywhere. Numbers are
kept as given (an ``int`` stays an ``int``: outputs do not move); anything that is not a number is None.
docs/architecture.md ("Typed contracts") lists what is viewed and what is not yet.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class JobSummary:
    """The training-job-summary section's data (``summary.build``): the job's length and its phases."""

    available: bool = False
    job_duration_s: float | None = None
    initialization_s: float | None = None
    initialization_pct: float | None = None
    training_loop_duration_s: float | None = None
    training_loop_pct: float | None = None
    finalization_s: float | None = None
    finalization_pct: float | None = None

    @classmethod
    def of(cls, data) -> JobSummary:
        """The view of a section's ``data`` (a dict from ``build_report`` or a report.json; anything else: empty)."""
        if not isinstance(data, dict):
            return cls()
        numbers = {f.name: _number(data.get(f.name)) for f in fields(cls) if f.name != "available"}
        return cls(available=bool(data) and data.get("available") is not False, **numbers)
