"""The single-run report's cost section: what the run cost, from its duration and the price table
(``reportgen.cost`` computes; this module words it)."""

from __future__ import annotations

from reportgen.cost import cost_text, load_prices, make_run_cost, price_note
from reportgen.formatting import money_text
from reportgen.report.model import Section, Table, Text
from reportgen.section_ids import SectionId


def build(duration_s, instance_type: str | None, instance_count: int | None, region: str | None = None,
                 prices_file: str | None = None, instance_from: str = "") -> Section:
    """The single-run report's cost section (shown only when the instance is known)."""
    section = Section(SectionId.COST, "Cost of this run", level=3)
    prices = load_prices(prices_file)
    run = make_run_cost(duration_s, instance_type, instance_count, region, prices, instance_from)
    data = {**run.to_data(), "prices": prices.provenance()}
    if run.cost is None:
        section.missing(f"The cost of this run cannot be estimated: {run.missing()}.")
        section.data.update(data)
        return section
    section.add(Text(f"This run on {run.instance_count} × {run.instance_type} ({run.region}) for "
                     f"{run.duration_s:g} s cost about {cost_text(run.cost, run.currency)}."))
    section.add(Table("run-cost", ["Instance type", "Count", "Region", "Price per hour", "Duration (s)", "Cost"],
                      [[run.instance_type, run.instance_count, run.region,
                        money_text(run.price_per_hour, run.currency, 3, grouping=False),
                        run.duration_s, cost_text(run.cost, run.currency)]],
                      ["text", "int", "text", "text", "int", "text"]))
    section.add(Text(price_note(prices), tone="note"))
    section.data = data
    return section
