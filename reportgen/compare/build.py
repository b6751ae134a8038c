"""The comparison of two runs, as the same renderer-neutral model the single report uses.

Each side is built exactly like its own report (``compare.side.load_side``); each section lives in its
own module under ``compare/sections/`` and only reads the sides' section ``data``.  Deltas are always B − A.
"""

from __future__ import annotations

from reportgen.compare.sections import (cost, data_quality, framework, operators, phases, rules, steps,
                                        utilization, verdict)
from reportgen.compare.side import Side
from reportgen.cost import PriceTable, load_prices
from reportgen.report.model import Report

# Section ids, in the page's order (the notebook has one cell per id).
SECTION_IDS = ("verdict", "cost", "duration-phases", "utilization", "step-durations", "framework",
               "operators", "rules", "data-quality")


def build_comparison(a: Side, b: Side, prices: PriceTable | None = None, force: bool = False) -> Report:
    """The comparison page's sections (ids in ``SECTION_IDS``), each with its numbers in ``data``; ``force``:
    a verdict even for runs the comparability check finds unrelated (``compare.comparability``)."""
    prices = prices or load_prices()
    cost_section, ca, cb, saving = cost.build(a, b, prices)
    phase_section, usage_section = phases.build(a, b), utilization.build(a, b)
    rule_section = rules.build(a, b)
    verdict_section = verdict.build(a, b, rule_section, ca, cb, saving, force)
    sections = [verdict_section, cost_section, phase_section, usage_section, steps.build(a, b),
                framework.build(a, b), operators.build(a, b), rule_section, data_quality.build(a, b)]
    assert tuple(s.id for s in sections) == SECTION_IDS
    return Report(job_name=f"{a.name} vs {b.name}", sections=sections, notes=a.notes + b.notes,
                  source=f"{a.source} vs {b.source}")
