"""Which rules fired in A and B: fixed, new, still firing."""

from __future__ import annotations

from reportgen.compare.side import Side
from reportgen.report.model import Section, Table, Text
from reportgen.report.views import rule_rows_of
from reportgen.section_ids import SectionId


def rule_status(ta, tb, a_evaluated: bool = True, b_evaluated: bool = True) -> str:
    """``fixed`` / ``new`` / ``still firing`` / ``not firing``; a side whose rule was not evaluated (it could
    not have fired there) makes no claim: a rule that fired in A is not "fixed" by a B too short to judge."""
    if ta and tb is not None and not tb and not b_evaluated:
        return "not evaluated in B"
    if tb and ta is not None and not ta and not a_evaluated:
        return "not evaluated in A"
    if ta is None:
        return "new" if tb else "only in B"
    if tb is None:
        return "fixed" if ta else "only in A"
    if ta and tb:
        return "still firing"
    if ta:
        return "fixed"
    if tb:
        return "new"
    return "not firing"


def build(a: Side, b: Side) -> Section:
    section = Section("rules", "Rules fired in A and B")
    ra, rb = ({r.rule: r for r in rule_rows_of(side.data(SectionId.RULES_SUMMARY_SECTION)) if r.rule is not None}
              for side in (a, b))
    for side, rules in ((a, ra), (b, rb)):
        if not rules:
            section.add(Text(f"{side.label} has no rule outputs besides the usage summaries.", tone="missing"))
    rows, data = [], []
    for rule in dict.fromkeys(list(ra) + list(rb)):
        ta = ra[rule].times_triggered if rule in ra else None
        tb = rb[rule].times_triggered if rule in rb else None
        status = rule_status(ta, tb, rule not in ra or ra[rule].status != "not_evaluated",
                             rule not in rb or rb[rule].status != "not_evaluated")
        rows.append([rule, ta, tb, status])
        data.append({"rule": rule, "a_times_triggered": ta, "b_times_triggered": tb, "status": status})
    order = {"still firing": 0, "new": 1, "fixed": 2, "not evaluated in A": 3, "not evaluated in B": 3,
             "only in A": 3, "only in B": 3, "not firing": 4}
    rows.sort(key=lambda r: order[r[3]])
    groups = {s: [d["rule"] for d in data if d["status"] == s] for s in ("fixed", "new", "still firing")}
    if rows:
        parts = [f"{len(groups['fixed'])} fixed", f"{len(groups['new'])} new",
                 f"{len(groups['still firing'])} still firing"]
        section.add(Text("Rules: " + ", ".join(parts) + "." + "".join(
            f" {s.capitalize()}: {', '.join(groups[s])}." for s in ("fixed", "new", "still firing") if groups[s]),
            tone="finding" if groups["new"] or groups["still firing"] else "ok"))
        section.add(Table("rules-compare", ["Rule", "A: times triggered", "B: times triggered", "Status"], rows,
                          ["text", "int", "int", "text"], row_header=True))
    else:
        section.data["available"] = False
    section.data.update({"rows": data, **{k.replace(" ", "_"): v for k, v in groups.items()}})
    return section
