"""Build the whole report model from a job's rule outputs."""

from __future__ import annotations

import traceback

from reportgen.report.model import Report, Section, Text
from reportgen.report.sections import BUILDERS
from reportgen.rule_outputs import RuleOutputs

# The deep dives below are grouped under this heading, as in the original report.
LOOP_HEADING_BEFORE = "step-duration-analysis"


def build_report(outputs: RuleOutputs, job_name: str = "", extra_notes: list[str] | None = None) -> Report:
    """Run every section builder; a failing builder costs its section, not the report."""
    notes = list(outputs.notes) + list(extra_notes or [])
    sections: list[Section] = []
    for section_id, builder in BUILDERS:
        if section_id == LOOP_HEADING_BEFORE:
            sections.append(Section("training-loop-analysis", "Analyzing the training loop", 2, [Text(
                "The following sections look at the training loop rule by rule: step durations, GPU use, "
                "data loading, batch size, bottlenecks and memory.")]))
        try:
            sections.append(builder(outputs))
        except Exception as err:  # keep the rest of the report; say what went wrong
            last = traceback.extract_tb(err.__traceback__)[-1]
            message = f"{type(err).__name__}: {err} (at {last.name}:{last.lineno})"
            notes.append(f"section {section_id} could not be built: {message}")
            failed = Section(section_id, section_id.replace("-", " ").capitalize(), 3)
            sections.append(failed.missing(f"This section could not be built from the data ({message})."))
    sections.append(data_quality_section(notes))
    return Report(job_name=job_name, sections=sections, notes=notes, source=str(outputs.folder))


def data_quality_section(notes: list[str]) -> Section:
    section = Section("data-quality", "Data quality", 2)
    if not notes:
        section.add(Text("Every input file was read completely; nothing was skipped.", tone="ok"))
    else:
        section.add(Text(f"{len(notes)} problem(s) were found while reading the input; everything else was used:",
                         tone="note"))
        for note in notes[:200]:
            section.add(Text(note, tone="note"))
        if len(notes) > 200:
            section.add(Text(f"... and {len(notes) - 200} more (see report.json).", tone="note"))
    section.data = {"problems": len(notes), "notes": notes[:1000]}
    return section
