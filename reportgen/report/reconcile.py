"""One story on the page: the deep dives and the system-usage sentences agree with At a glance.

Each rule words its own advice ("consider a smaller instance type"), written for its one symptom. When the
diagnosis found the cause behind that symptom, the rule's advice can be wrong for this job (idle GPUs that
wait for data are not a reason to buy a smaller instance). Such a sentence stays, as the rule's own output,
and gets a note right after it, in brackets in the same paragraph (after a table: the next paragraph), saying why
At a glance's finding makes the advice wrong here. And every
section At a glance links to for a finding opens with that finding's evidence, so a link never lands on a
section that seems to say the opposite ("did not fire").
"""

from __future__ import annotations

from dataclasses import replace

from reportgen.diagnosis.evidence import AT_EXIT, FROM_STEPS
from reportgen.formatting import human_duration, iso_utc
from reportgen.report.model import Report, Section, Table, Text
from reportgen.section_ids import SectionId

# Advice that sizes the instance down: wrong when the GPUs idle for a cause that a smaller instance keeps.
SMALLER = ("smaller instance",)
SIZE_CAUSES = {  # one line each: the note sits beside the rule's own sentence
    "input-pipeline": "the GPUs wait for their data; a smaller instance would not help",
    "cpu-bound": "the GPUs wait for saturated CPUs; a smaller instance has fewer of them",
    "io-bound": "the GPUs wait for storage; a smaller instance would not help",
    "load-imbalance": "the work is spread unevenly; balance it before resizing",
    "straggler": "one worker holds the others back; speed it up before resizing",
}
NOTE_TONE = "note"
TOP = 3  # findings, and links per finding, that At a glance shows (report.glance.TOP)


def _superseding(report: Report):
    """The first finding that makes 'a smaller instance' advice wrong, with why."""
    for finding in report.diagnosis.findings:
        if finding.counts and finding.cause in SIZE_CAUSES:
            return finding, SIZE_CAUSES[finding.cause]
    return None, ""


def _straggler_node(report: Report) -> str | None:
    finding = next((f for f in report.diagnosis.findings if f.cause == "straggler"), None)
    who = str((finding.metrics or {}).get("who", "")) if finding else ""
    return who.split("/")[0].rsplit("-", 1)[0] if who.startswith("algo-") else None


def _mark_advice(section: Section, title: str | None, why: str, straggler: str | None) -> None:
    """A note after each sentence of the section that advises a smaller instance."""
    blocks = []
    for block in section.blocks:
        blocks.append(block)
        text = block.text if isinstance(block, Text) else ""
        if isinstance(block, Table):  # a fired rule's recommendation in the rules summary
            fired_rows = [row for row in block.rows if any(str(c).lower() == "fired" for c in row)]
            text = " ".join(str(c) for row in fired_rows for c in row)
        if not any(a in text.lower() for a in SMALLER):
            continue
        if straggler and f"node {straggler} " in text:
            note = f"Superseded by At a glance: {straggler} is the straggler; a smaller instance would slow the job."
        elif title:
            note = f"Superseded by At a glance: {why}."
        else:
            continue
        if isinstance(block, Text):  # in the same paragraph, right after the words it supersedes
            blocks[-1] = replace(block, text=f"{block.text} [{note}]")
        else:
            blocks.append(Text(note, tone=NOTE_TONE))
    section.blocks = blocks


# The Dataloader rule's advice when fewer loaders than cores ran (report.sections.dataloader): wrong when
# At a glance found the cores already full (the training processes use them too).
MORE_WORKERS = ": consider more workers."
CORES_LIMIT = "The cores are the limit: "


def _cores_limit(report: Report) -> str | None:
    """Why more workers would not help, from the input-pipeline finding's fix ("The cores are the limit: 4 cores
    per node leave 1 data-loading worker to each of 2 training processes. ..."), or None."""
    finding = next((f for f in report.diagnosis.findings if f.cause == "input-pipeline"), None)
    if finding is None or not str(finding.fix).startswith(CORES_LIMIT):
        return None
    return str(finding.fix)[len(CORES_LIMIT):].split(". ", 1)[0].rstrip(".")


def _mark_more_workers(section: Section, limit: str) -> None:
    """"consider more workers" under At a glance's "the cores are the limit": the sentence keeps its counts and
    says instead why more workers would not help."""
    section.blocks = [replace(b, text=b.text.replace(MORE_WORKERS, f" [At a glance: the cores are the limit, {limit}; "
                                                                    "more workers would compete with training for "
                                                                    "them]."))
                      if isinstance(b, Text) and MORE_WORKERS in b.text else b for b in section.blocks]


def _evidence_note(section: Section, finding) -> None:
    """The finding's evidence at the top of a section that At a glance links to for it."""
    evidence = "; ".join(finding.evidence[:2])
    section.blocks.insert(0, Text(f"At a glance links here for “{finding.title}”: {evidence}.", tone=NOTE_TONE,
                                  link="#at-a-glance", link_text="At a glance"))


NO_LOOP = "so the training loop, initialization and finalization times cannot be computed. "


def _loop_from_traces(report: Report) -> None:
    """A recording's summary has no step boundaries in its system metrics, but the diagnosis estimated the loop
    from the traces (and At a glance shows it): the summary says so, with the same numbers, instead of "cannot be
    computed"."""
    ev = report.diagnosis.evidence
    if ev.loop is None or ev.loop_s is None or ev.trace_only:
        return
    start, end = ev.loop
    began, ended = ev.loop_marks or (FROM_STEPS, AT_EXIT)
    export = (f", the profiler's own export ({human_duration(ev.profiler_export_s)}) left out"
              if ev.profiler_export_s else "")
    shutdown = (f", shutdown after it {human_duration(ev.shutdown_s)}" if ended != AT_EXIT and ev.shutdown_s
                else "")
    estimate = (f"so the training loop is estimated from the profiler traces and the recording: from "
                f"{iso_utc(start)} ({began}) to {iso_utc(end)} ({ended}): {human_duration(ev.loop_s)}{export}; "
                f"initialization took about {human_duration(ev.init_s or 0.0)}{shutdown}. At a glance and the "
                f"findings' shares use this estimate. ")
    for section in report.sections:
        if section.id == SectionId.TRAINING_JOB_SUMMARY:
            section.blocks = [replace(b, text=b.text.replace(NO_LOOP, estimate))
                              if isinstance(b, Text) and NO_LOOP in b.text else b for b in section.blocks]


def shows_data(section: Section) -> bool:
    """A section with more than "no data" lines (the others are folded into one list, never linked to)."""
    return any(not (isinstance(b, Text) and b.tone == "missing") for b in section.blocks)


def reconcile(report: Report, rule_sections: dict[str, str] | None = None) -> None:
    """Mark superseded advice, and put each finding's evidence at the top of a rule's deep dive that At a glance
    links to while that rule did not fire (``rule_sections``: section id -> its rule): there the section's own
    verdict ("did not fire", "not evaluated") would seem to say the opposite. Sections that show the evidence
    themselves (the fired rule's deep dive, the utilization charts) are left as they are."""
    if report.diagnosis is None:
        return
    _loop_from_traces(report)
    finding, why = _superseding(report)
    straggler = _straggler_node(report)
    limit = _cores_limit(report)
    for section in report.sections:
        _mark_advice(section, finding.title if finding is not None else None, why, straggler)
        if limit:
            _mark_more_workers(section, limit)
    shown = {s.id: s for s in report.sections if not s.hidden and shows_data(s)}
    states = report.diagnosis.evidence.states
    for finding in reversed(report.diagnosis.findings[:TOP]):  # the first finding's note ends up on top
        for section_id in [s for s in finding.sections if s in shown][:TOP]:  # the links At a glance shows
            rule = (rule_sections or {}).get(section_id)
            if rule is not None and states.get(rule, ("",))[0] != "fired":
                _evidence_note(shown[section_id], finding)
