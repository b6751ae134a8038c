"""Build the whole report model from a job's rule outputs."""

from __future__ import annotations

import traceback

from reportgen.diagnosis import NOT_EVALUATED, diagnose
from reportgen.report.reconcile import reconcile
from reportgen.report.model import Chart, Columns, Details, Heading, ItemList, Report, Section, Table, Text
from reportgen.report.sections import SECTIONS
from reportgen.rule_outputs import RuleOutputs
from reportgen.rulebook import DEEP_DIVES, RuleName
from reportgen.section_ids import SectionId
from reportgen.trace_ranks import doc_traces_name
from reportgen.report.sections.cost import build as cost_section
from reportgen.problems import LoggedProblems
from reportgen.report.views import CostFigures, JobSummary
from reportgen.timeline_view import Timeline


def loop_intro() -> Section:
    """The heading the deep dives are grouped under, as in the original report."""
    return Section(SectionId.TRAINING_LOOP_ANALYSIS, "Analyzing the training loop", 2, [])


def build_report(outputs: RuleOutputs, job_name: str = "", extra_notes: list[str] | None = None,
                 cost: dict | None = None, debug: bool = False) -> Report:
    """Every section in ``SECTIONS`` order; a failing builder costs its section, not the report (``debug``:
    it raises, so ``generate --debug`` fails with its traceback).
    ``cost``: ``reportgen.report.sections.cost.build``'s arguments (instance type, count, region, prices file), when
    the instance type is known; the run's duration comes from the summary built before it."""
    notes = list(outputs.notes) + list(extra_notes or [])
    sections: list[Section | None] = []
    for section_id, builder in SECTIONS:
        if section_id == SectionId.DATA_QUALITY:
            sections.append(None)  # built last, once every builder's notes are in
        elif section_id == SectionId.COST:
            sections += [_cost(sections, cost)] if cost else []
        elif section_id == SectionId.TRAINING_LOOP_ANALYSIS:
            sections.append(loop_intro())
        else:
            sections.append(_build(section_id, builder, outputs, notes, debug))
    sections = [s if s is not None else data_quality_section(notes, outputs.data_quality) for s in sections]
    intro = kineto_intro(outputs.traces) if fold_inapplicable(sections, outputs) else ""
    report = Report(job_name=job_name, sections=sections, notes=notes, source=str(outputs.folder), intro=intro,
                    raw=Timeline.of(outputs.timeline).listed_nodes)
    cost_data = next((s.data for s in sections if s.id == SectionId.COST), None)
    attach_diagnosis(report, outputs, cost_data, debug)
    reconcile(report, DEEP_DIVES)
    fold_missing(sections)
    make_deep_dives_collapsible(sections, outputs)
    return report


def attach_diagnosis(report: Report, outputs: RuleOutputs, cost: dict | None = None, debug: bool = False) -> None:
    """Diagnose the job (with its cost when the instance and price are known: the cost section's data)
    and mark the deep dives of rules that could not be evaluated."""
    report.cost = cost or {}
    figures = CostFigures.of(report.cost)
    try:
        report.diagnosis = diagnose(outputs, price_per_hour=figures.price_per_hour,
                                    instance_count=figures.instance_count, job_cost=figures.cost)
    except Exception as err:  # the diagnosis costs only itself: the report is still made, and says so
        if debug:
            raise
        last = traceback.extract_tb(err.__traceback__)[-1]
        _quality_note(report, f"the diagnosis could not be made: {type(err).__name__}: {err} (at {last.name}:{last.lineno})")
        report.diagnosis = None
        return
    for note in report.diagnosis.quality_notes:  # evidence a finding set aside: said, never silently dropped
        _quality_note(report, note)
    for section in report.sections:
        rule = DEEP_DIVES.get(section.id)
        state, reason = report.diagnosis.evidence.states.get(rule, (None, ""))
        if rule is None or state != NOT_EVALUATED or section.data.get("evaluation") == NOT_EVALUATED:
            continue
        section.blocks.insert(0, Text(f"{rule} was not evaluated: {reason}. It could not have fired, so the "
                                      "absence of a finding here says nothing about the job.", tone="missing"))
        section.data["evaluation"] = NOT_EVALUATED
        section.data["not_evaluated_reason"] = reason


def _quality_note(report: Report, note: str) -> None:
    """A note made after the sections were built: into the report's notes and its Data quality section."""
    report.notes.append(note)
    quality = next((s for s in report.sections if s.id == SectionId.DATA_QUALITY), None)
    if quality is not None:  # built already: the note is added to it
        quality.add(Text(note, tone="note"))
        quality.data["notes"] = [*quality.data.get("notes", []), note]
        quality.data["problems"] = quality.data.get("problems", 0) + 1


def _cost(built: list[Section | None], cost: dict) -> Section:
    summary = next((s for s in built if s is not None and s.id == SectionId.TRAINING_JOB_SUMMARY), None)
    return cost_section(JobSummary.of(summary.data).job_duration_s if summary else None, **cost)


class SectionBuildError(Exception):
    """A section builder raised under ``debug`` (the builder's own exception is its ``__cause__``): the run fails
    naming the section, as a failing section cell does (``render.html`` reads the name)."""

    def __init__(self, section_id: str, err: Exception):
        super().__init__(f"section {section_id}: {type(err).__name__}: {err}")


def _build(section_id: str, builder, outputs: RuleOutputs, notes: list[str], debug: bool = False) -> Section:
    try:
        return builder(outputs)
    except Exception as err:  # keep the rest of the report; say what went wrong
        if debug:
            raise SectionBuildError(section_id, err) from err
        last = traceback.extract_tb(err.__traceback__)[-1]
        message = f"{type(err).__name__}: {err} (at {last.name}:{last.lineno})"
        notes.append(f"section {section_id} could not be built: {message}")
        failed = Section(section_id, section_id.replace("-", " ").capitalize(), 3)
        return failed.missing(f"This section could not be built from the data ({message}).")


# What reportgen.trace_analysis derives from PyTorch profiler traces; every other rule needs SageMaker Debugger data.
KINETO_RULES = frozenset({RuleName.STEP_OUTLIER})
KINETO_INTRO = ("This report summarises PyTorch profiler traces, one per rank: what each GPU ran and how long it "
                "sat idle, which CPU operators cost most, how long each step took, and which rank lags behind.")


def kineto_intro(doc) -> str:
    """``KINETO_INTRO`` naming the traces the report read (JAX / TensorFlow ones are not PyTorch's)."""
    return KINETO_INTRO.replace("PyTorch profiler traces", doc_traces_name(doc), 1)


def fold_inapplicable(sections: list[Section], outputs: RuleOutputs) -> bool:
    """A report made from PyTorch profiler traces alone hides the sections that need SageMaker
    Debugger's system metrics or framework traces: a dozen "No ... output was found" lines said
    nothing about the job. One text at the top of the PyTorch section names them instead; they stay
    in report.json with ``available: false``. True when it folded any (the header then says what the
    report covers: ``KINETO_INTRO``)."""
    doc = outputs.traces if isinstance(outputs.traces, dict) else {}
    if not doc.get("ranks") or set(outputs.rules) - KINETO_RULES or Timeline.of(outputs.timeline).listed_nodes:
        return False
    folded = [s for s in sections if s.data.get("available") is False]
    if not folded:
        return False
    for section in folded:
        section.hidden = True
    host = next((s for s in sections if s.id == SectionId.GPU_KERNELS_OPERATORS), None)
    if host is not None:
        names = ", ".join(s.title for s in folded)
        host.blocks.insert(0, Text(
            f"This report was made from {doc_traces_name(doc)} only. The {len(folded)} sections that need "
            f"SageMaker Debugger's system metrics or framework traces are left out: {names}.", tone="note"))
    loop = next((s for s in sections if s.id == SectionId.TRAINING_LOOP_ANALYSIS), None)
    if loop is not None:
        loop.blocks = [Text("The following sections look at the training loop rule by rule. From "
                            f"{doc_traces_name(doc)}, that is the step durations.")]
    return True


def deep_dive_verdict(rule, data: dict) -> tuple[bool, str]:
    """(open by default, the one line shown on the deep dive's summary) from its rule's output."""
    if rule is None:
        return False, "no output"
    if data.get("evaluation") == NOT_EVALUATED:
        return False, "not evaluated"
    if rule.triggered > 0:
        return True, f"fired {rule.triggered} time{'s' if rule.triggered != 1 else ''}"
    if not rule.datapoints:
        return False, "no datapoints"
    return False, "did not fire"


def make_deep_dives_collapsible(sections: list[Section], outputs: RuleOutputs) -> None:
    """Short to scan, deep on demand: each rule's deep dive becomes a <details> element (works without
    JavaScript), open for the rules that found something, closed with a one-line verdict otherwise."""
    for section in sections:
        rule = DEEP_DIVES.get(section.id)
        if rule is None or section.hidden:
            continue
        section.collapsible = True
        section.open, section.verdict = deep_dive_verdict(outputs.get(rule), section.data)
        # By convention a deep dive opens with how its rule decides (what it checks, its parameters and
        # counts), after a "not evaluated" note if any: one click away, so the findings come first.
        for index, block in enumerate(section.blocks[:2]):
            if isinstance(block, Text) and block.tone in ("plain", "finding"):
                section.blocks[index] = Details(f"How {rule} decides", [block])
                break
        text_beside_last_chart(section)


def text_beside_last_chart(section: Section) -> None:
    """A deep dive that ends with one chart after a run of paragraphs shows them side by side (the
    chart beside the text that reads it) instead of one under the other."""
    if len(section.blocks) < 2 or not isinstance(section.blocks[-1], Chart):
        return
    start = len(section.blocks) - 1
    while start > 0 and isinstance(section.blocks[start - 1], (Text, Heading)):
        start -= 1
    texts = section.blocks[start:-1]
    if any(isinstance(b, Text) for b in texts):
        section.blocks[start:] = [Columns([texts, [section.blocks[-1]]])]


def fold_missing(sections: list[Section]) -> None:
    """A section with nothing to show but "no data" lines is one line of a compact "Not in this data"
    list (in the Data quality section) instead of a heading and a sentence of its own. It stays in
    report.json with ``available: false``."""
    lines = []
    for section in sections:
        if section.hidden or section.id == SectionId.DATA_QUALITY or not section.blocks:
            continue
        if all(isinstance(b, Text) and b.tone == "missing" for b in section.blocks):
            section.hidden = True
            lines.append(f"{section.title}: " + " ".join(b.text for b in section.blocks))
    quality = next((s for s in sections if s.id == SectionId.DATA_QUALITY), None)
    if lines and quality is not None:
        quality.blocks[:0] = [Text("Not in this data (these sections had nothing to show):", tone="note"),
                              ItemList(lines)]
        quality.data["not_in_this_data"] = lines


def data_quality_section(notes: list[str], engine: dict | None = None) -> Section:
    """Everything skipped or defaulted while reading: loader notes and the engine's problem log."""
    section = Section(SectionId.DATA_QUALITY, "Data quality", 2)
    engine = engine if isinstance(engine, dict) else {}
    logged = LoggedProblems.of(engine)
    total = logged.total
    if total:
        section.add(Text(f"{total} problem(s) were found in the raw profiler data; each one cost only the "
                         "record concerned, everything else was used.", tone="note"))
        section.add(Table("data-quality-reasons", ["Problem", "Count"],
                          [[str(reason), count] for reason, count in logged.by_reason.items()], ["text", "int"]))
        listed = logged.listed
        if listed:
            section.add(Table("data-quality-problems", ["File", "Line", "Problem"], [list(p) for p in listed],
                              ["text", "text", "text"],
                              caption=f"The first {len(listed)} of {total} problems"))
    if not notes and not total:
        section.add(Text("Every input file was read completely; nothing was skipped.", tone="ok"))
    elif notes:
        section.add(Text(f"{len(notes)} problem(s) were found while reading the input; everything else was used:",
                         tone="note"))
        for note in notes[:200]:
            section.add(Text(note, tone="note"))
        if len(notes) > 200:
            section.add(Text(f"... and {len(notes) - 200} more (see report.json).", tone="note"))
    section.data = {"problems": len(notes) + total, "notes": notes[:1000], "raw_data": engine or None}
    return section
