"""Rules summary: every rule with its finding count, datapoints and parameters.

A rule that could not have fired (no datapoints, fewer than its patience, data this job lacks) is
"not evaluated", never counted among the rules that passed (see reportgen.diagnosis.evaluation).
"""

from __future__ import annotations

from reportgen.diagnosis import rule_states
from reportgen.report.model import Section, Table, Text
from reportgen.report.rule_texts import describe, finding, recommend
from reportgen.rulebook import RULE_ORDER, SUMMARY_RULES
from reportgen.rule_outputs import RuleOutputs
from reportgen.section_ids import SectionId


def summary_rows(outputs: RuleOutputs) -> list[dict]:
    """Rules sorted by times triggered, descending; ties in ProfilerReport's rule order.

    (The original broke ties by directory-listing order, which is not reproducible.)
    """
    states = rule_states(outputs)
    rows = []
    for name, rule in outputs.rules.items():
        if name in SUMMARY_RULES:
            continue
        state, reason = states.get(name, ("not_evaluated", "no output"))
        rows.append({
            "rule": name,
            "description": describe(name),
            "recommendation": recommend(name),
            "times_triggered": rule.triggered,
            "violations": rule.violations,
            "datapoints": rule.datapoints,
            "parameters": rule.parameters_text,
            "status": state,
            "not_evaluated_reason": reason or None,
            "finding": finding(name, rule.triggered, rule.violations, rule.datapoints, state, reason),
        })
    rows.sort(key=lambda r: (-r["times_triggered"], RULE_ORDER.index(r["rule"])))
    return rows


def lead_text(rows: list[dict]) -> Text:
    """What the rules found, counting only the rules that could judge; never an all-clear over rules
    that were not evaluated."""
    fired = [r for r in rows if r["status"] == "fired"]
    skipped = [r["rule"] for r in rows if r["status"] == "not_evaluated"]
    evaluated = len(rows) - len(skipped)
    not_eval = (f" {len(skipped)} could not be evaluated with this data ({', '.join(skipped)}): "
                "see the Status column." if skipped else "")
    if fired:
        return Text(f"{len(fired)} of the {evaluated} evaluated rules fired ({', '.join(r['rule'] for r in fired)})."
                    f"{not_eval} At a glance ranks what they mean by cost in time, not by how often a rule fired.",
                    tone="finding")
    if not evaluated:
        return Text(f"No rule could be evaluated with this data ({', '.join(skipped)}): the Status column says "
                    "why for each. This is not an all-clear.", tone="missing")
    if skipped:
        return Text(f"None of the {evaluated} evaluated rules fired.{not_eval}", tone="note")
    return Text(f"None of the {len(rows)} rules fired.", tone="ok")


def status_cell(row: dict) -> str:
    if row["status"] == "not_evaluated":
        return f"Not evaluated: {row['not_evaluated_reason']}"
    return "Fired" if row["status"] == "fired" else "Did not fire"


def build(outputs: RuleOutputs) -> Section:
    section = Section(SectionId.RULES_SUMMARY_SECTION, "Rules summary")
    rows = summary_rows(outputs)
    if not rows:
        return section.missing("No rule outputs besides the usage summaries were found.")
    section.add(lead_text(rows))
    section.add(Text("Rules by how often they fired: whether each fired, did not fire or could not be evaluated "
                     "(and why), what to do about it, and its parameters; what each checks is in its deep dive."))
    section.add(Table(
        "rules-summary",
        ["Rule", "Status", "Recommendation", "Number of times rule triggered", "Number of datapoints",
         "Rule parameters"],
        [[r["rule"], status_cell(r), r["recommendation"], r["times_triggered"], r["datapoints"], r["parameters"]]
         for r in rows],
        ["text", "text", "text", "int", "int", "params"],
    ))
    section.data = {"rows": rows}
    return section
