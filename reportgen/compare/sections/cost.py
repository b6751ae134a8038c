"""Cost per run of A and B, from the profiled job durations and the price table."""

from __future__ import annotations

from reportgen.compare.side import Side
from reportgen.cost import PriceTable, RunCost, compare_costs, cost_text, make_run_cost, price_note
from reportgen.formatting import money_text
from reportgen.report.model import Section, Table, Text


def build(a: Side, b: Side, prices: PriceTable) -> tuple[Section, RunCost, RunCost, dict]:
    section = Section("cost", "Cost per run")
    ca = make_run_cost(a.summary().job_duration_s, a.instance_type, a.instance_count,
                       a.region, prices, a.instance_from)
    cb = make_run_cost(b.summary().job_duration_s, b.instance_type, b.instance_count,
                       b.region, prices, b.instance_from)
    saving = compare_costs(ca, cb)

    def money(run: RunCost):
        return cost_text(run.cost, run.currency)

    rows = []
    for label, run in (("A", ca), ("B", cb)):
        rows.append([label, run.instance_type or "unknown", run.instance_count, run.region,
                     money_text(run.price_per_hour, run.currency, 3, grouping=False) if run.price_per_hour is not None else "unknown",
                     run.duration_s, money(run), run.instance_from or ""])
    section.add(Text("Cost per run = job duration × instance count × hourly price ÷ 3600, from the profiled "
                     "job duration (not AWS's billed time, which also counts the instance start-up)."))
    section.add(Table("cost-table", ["Run", "Instance type", "Count", "Region", "Price per hour", "Duration (s)",
                                     "Cost per run", "Instance from"],
                      rows, ["text", "text", "int", "text", "num2", "int", "num2", "text"]))
    if saving["saving"] is not None:
        more = saving["saving"] < 0
        section.add(Text(f"B costs {money(cb)} per run against {money(ca)} for A: " + saving_words(saving, cb.currency)
                         + ".", tone="finding" if more else "ok"))
    else:
        for label, run in (("A", ca), ("B", cb)):
            if run.cost is None:
                section.add(Text(f"No cost for {label}: {run.missing()} (give --instance-{label.lower()} and "
                                 f"--count-{label.lower()}, or a price with --prices).", tone="missing"))
    section.add(Text(price_note(prices), tone="note"))
    section.data = {"a": ca.to_data(), "b": cb.to_data(), **saving, "prices": prices.provenance()}
    return section, ca, cb, saving


def saving_words(saving: dict, currency: str = "USD") -> str:
    """"a saving of $5.09 per run, 82.6 % (from the rounded costs; 82.7 % from the unrounded ones)"; from the
    unrounded costs alone when A's rounds to no cent (no percentage of $0.00)."""
    more, pct, rounded_pct = saving["saving"] < 0, saving["saving_pct"], saving["saving_pct_from_rounded"]
    if pct is None:  # A cost nothing at all
        return "A cost nothing, so no percentage" if more else "neither cost anything"
    if rounded_pct is None:
        change = f"{abs(pct):.1f} % more" if more else f"{pct:.1f} % less"
        return f"{change} (from the unrounded costs: A's rounds to no cent)"
    change = (f"{abs(rounded_pct):.1f} % more" if more else
              f"a saving of {money_text(saving['saving_rounded'], currency, grouping=False)} per run, {rounded_pct:.1f} %")
    return f"{change} (from the rounded costs; {abs(pct):.1f} % from the unrounded ones)"
