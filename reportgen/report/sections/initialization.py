"""Initialization time (MaxInitializationTime): how long until the first training step."""

from __future__ import annotations

from reportgen.report.model import Section, Text
from reportgen.report.sections.summary import compute
from reportgen.report.trace_facts import initialization_sentence, trace_facts
from reportgen.rule_outputs import JobTimes, RuleOutputs
from reportgen.rulebook import RuleName
from reportgen.section_ids import SectionId


def build(outputs: RuleOutputs) -> Section:
    section = Section(SectionId.INITIALIZATION_TIME, "Initialization time", level=3)
    rule = outputs.get(RuleName.MAX_INITIALIZATION_TIME)
    if rule is None:
        return section.missing("No MaxInitializationTime output was found.")
    threshold = rule.param("threshold", 20)
    summary = compute(rule.details) or {}
    init = summary.get("initialization_s")
    text = (f"The MaxInitializationTime rule fires when the first training step starts more than {threshold} "
            f"minutes after the job started. It fired {rule.triggered} times.")
    if init is not None:
        text += f" Initialization took {init} seconds ({init / 60:.1f} minutes)."
    section.add(Text(text, tone="finding" if rule.triggered else "plain"))
    if rule.triggered:
        section.add(Text("Initialization was long: stream the input data instead of downloading it before "
                         "training (Pipe or FastFile mode), or check what the training script does before "
                         "its first step.", tone="finding"))
    elif init is None and (bound := initialization_sentence(trace_facts(outputs), JobTimes.of(rule.details).start_s)):
        section.add(Text("The system metrics hold no step boundaries. " + bound, tone="note"))
    elif init is None and JobTimes.of(rule.details).problems:
        section.missing("The recorded job or step times are impossible (see Data quality), so the initialization "
                        "time is unknown.")
    elif init is None:
        section.missing("No step information was profiled, so the initialization time is unknown.")
    section.data = {"triggered": rule.triggered, "initialization_s": init, "threshold_min": threshold}
    return section
