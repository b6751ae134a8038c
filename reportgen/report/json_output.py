"""The machine-readable ``report.json``: the same numbers as the report's tables."""

from __future__ import annotations

import math

from reportgen import __version__
from reportgen.report.model import Report

# 1.1: rules-summary-section rows carry "status" and "finding" (docs/report-json.md).
# 1.2: top-level "diagnosis"; row status "not_evaluated" (was "no_data") with "not_evaluated_reason".
SCHEMA_VERSION = "1.2"


def json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return json_safe(value.item())
    return value


def report_data(report: Report, generated_at: str) -> dict:
    """Section data keyed by section id, plus provenance."""
    return json_safe({
        "schema_version": SCHEMA_VERSION,
        "generator": {"name": "reportgen", "version": __version__, "generated_at": generated_at},
        "job": {"name": report.job_name, "source": report.source, "description": report.description,
                "incomplete": report.incomplete},
        "diagnosis": report.diagnosis.to_data() if report.diagnosis is not None else None,
        "sections": {section.id: section.data for section in report.sections},
    })
