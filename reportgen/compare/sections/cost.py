"""Cost per run of A and B, from the profiled job durations and the price table."""

from __future__ import annotations

from reportgen.compare.side import Side
from reportgen.cost import PriceTable, RunCost, compare_costs, make_run_cost, price_note
from reportgen.formatting import money_text
from reportgen.report.model import Section, Table, Text


def build(a: Side, b: Side, prices: PriceTable) -> tuple[Section, RunCost, RunCost, dict]:
    section = Section("cost", "Cost per run")
    ca = make_run_cost(a.data("training-job-summary").get("job_duration_s"), a.instance_type, a.instance_count,
                       a.region, prices, a.instance_from)
    cb = make_run_cost(b.data("training-job-summary").get("job_duration_s"), b.instance_type, b.instance_count,
                       b.region, prices, b.instance_from)
    saving = compare_costs(ca, cb)

    def money(run: RunCost):
        return money_text(run.cost_rounded, run.currency, grouping=False) if run.cost is not None else "unknown"

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
        section.add(Text(
            f"B costs {money(cb)} per run against {money(ca)} for A: "
            + (f"{abs(saving['saving_pct_from_rounded']):.1f} % more"
               if more else f"a saving of {money_text(saving['saving_rounded'], cb.currency, grouping=False)} per run, "
                            f"{saving['saving_pct_from_rounded']:.1f} %")
            + f" (from the rounded costs; {abs(saving['saving_pct']):.1f} % from the unrounded ones).",
            tone="finding" if more else "ok"))
    else:
        for label, run in (("A", ca), ("B", cb)):
            if run.cost is None:
                section.add(Text(f"No cost for {label}: {run.missing()} (give --instance-{label.lower()} and "
                                 f"--count-{label.lower()}, or a price with --prices).", tone="missing"))
    section.add(Text(price_note(prices), tone="note"))
    section.data = {"a": ca.to_data(), "b": cb.to_data(), **saving, "prices": prices.provenance()}
    return section, ca, cb, saving
