"""Rules summary: every rule with its finding count, datapoints and parameters."""

from __future__ import annotations

from reportgen.report.model import Section, Table, Text
from reportgen.report.rule_texts import describe, finding, recommend, rule_status
from reportgen.rule_names import RULE_ORDER, SUMMARY_RULES
from reportgen.rule_outputs import RuleOutputs


def summary_rows(outputs: RuleOutputs) -> list[dict]:
    """Rules sorted by times triggered, descending; ties in ProfilerReport's rule order.

    (The original broke ties by directory-listing order, which is not reproducible.)
    """
    rows = [
        {
            "rule": name,
            "description": describe(name),
            "recommendation": recommend(name),
            "times_triggered": rule.triggered,
            "violations": rule.violations,
            "datapoints": rule.datapoints,
            "parameters": rule.parameters_text,
            "status": rule_status(rule.triggered, rule.datapoints),
            "finding": finding(name, rule.triggered, rule.violations, rule.datapoints),
        }
        for name, rule in outputs.rules.items()
        if name not in SUMMARY_RULES
    ]
    rows.sort(key=lambda r: (-r["times_triggered"], RULE_ORDER.index(r["rule"])))
    return rows


def build(outputs: RuleOutputs) -> Section:
    section = Section("rules-summary-section", "Rules summary")
    rows = summary_rows(outputs)
    if not rows:
        return section.missing("No rule outputs besides the usage summaries were found.")
    fired = [r for r in rows if r["times_triggered"] > 0]
    if fired:
        top = fired[0]
        lead = (f"{len(fired)} of {len(rows)} rules fired. The most frequently triggered was "
                f"{top['rule']}: it processed {top['datapoints']} datapoints and fired "
                f"{top['times_triggered']} times.")
        section.add(Text(lead, tone="finding"))
    else:
        section.add(Text(f"None of the {len(rows)} rules fired.", tone="ok"))
    section.add(Text("The table lists the rules sorted by how often they fired, with what each one "
                     "checks, what to do about it, and the parameters it ran with."))
    section.add(Table(
        "rules-summary",
        ["Rule", "Description", "Recommendation", "Number of times rule triggered",
         "Number of datapoints", "Rule parameters"],
        [[r["rule"], r["description"], r["recommendation"], r["times_triggered"], r["datapoints"],
          r["parameters"]] for r in rows],
        ["text", "text", "text", "int", "int", "lines"],
    ))
    section.data = {"rows": rows}
    return section
