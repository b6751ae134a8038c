"""Top CPU and GPU operators (from OverallFrameworkMetrics' CPU/GPU breakdowns)."""

from __future__ import annotations

from reportgen.report.model import Section, Table, Text
from reportgen.report.trace_facts import trace_facts
from reportgen.report.util import as_dict, number
from reportgen.rule_outputs import RuleOutputs
from reportgen.rulebook import RuleName


def operator_rows(details: dict, kind: str) -> list[dict]:
    """Rows sorted by share, descending: percentage (2 decimals), cumulative µs, operator."""
    shares = as_dict(details.get(kind))
    totals = as_dict(details.get(f"{kind}_total"))
    rows = []
    for name, total in totals.items():
        share = number(shares.get(name))
        total = number(total)
        if share is None or total is None:
            continue
        rows.append({"percentage": round(share, 2), "time": int(total) if total.is_integer() else total,
                     "operator": str(name)})
    rows.sort(key=lambda r: r["percentage"], reverse=True)
    return rows


def _build(outputs: RuleOutputs, kind: str) -> Section:
    device = kind  # "CPU" or "GPU"
    section = Section(f"{kind.lower()}-operators-overview", f"Overview: {device} operators", level=3, half=True)
    rule = outputs.get(RuleName.OVERALL_FRAMEWORK_METRICS)
    rows = operator_rows(rule.details, kind) if rule else []
    facts = trace_facts(outputs)
    if not rows and facts.any and (device == "CPU" and facts.cpu_ops):
        return section.missing(f"SageMaker Debugger recorded no {device} operators; the {facts.name} "
                               f"hold {facts.cpu_ops} CPU operator calls, ranked per rank ({facts.pointer()}).")
    if not rows:
        return section.missing(f"No {device} operators were recorded (detailed framework profiling was off, "
                               "or no operator took more than 2 % of the time).")
    top = rows[0]
    section.add(Text(f"Operators that ran on the {device}s, by share of {device} operator time. The most "
                     f"expensive was \u201c{top['operator']}\u201d with {top['percentage']:.2f} %."))
    section.add(Table(f"{kind.lower()}-operators", ["Percentage", "Cumulative time", f"{device} operator"],
                      [[r["percentage"], r["time"], r["operator"]] for r in rows], ["num2", "us", "text"],
                      bar_column=0))
    section.data = {"rows": rows}
    return section


def build_cpu(outputs: RuleOutputs) -> Section:
    return _build(outputs, "CPU")


def build_gpu(outputs: RuleOutputs) -> Section:
    return _build(outputs, "GPU")
