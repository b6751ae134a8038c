"""One story on the page: the deep dives and the system-usage sentences agree with At a glance.

Each rule words its own advice ("consider a smaller instance type"), written for its one symptom. When the
diagnosis found the cause behind that symptom, the rule's advice can be wrong for this job (idle GPUs that
wait for data are not a reason to buy a smaller instance). Such a sentence stays, as the rule's own output,
and gets a note right after it saying what At a glance found and why the advice does not apply. And every
section At a glance links to for a finding opens with that finding's evidence, so a link never lands on a
section that seems to say the opposite ("did not fire").
"""

from __future__ import annotations

from reportgen.report.model import Report, Section, Table, Text

# Advice that sizes the instance down: wrong when the GPUs idle for a cause that a smaller instance keeps.
SMALLER = ("smaller instance",)
SIZE_CAUSES = {
    "input-pipeline": "the GPUs wait for their data, so a smaller instance would not help until the input "
                      "pipeline keeps up",
    "cpu-bound": "the GPUs wait for the CPUs, which are already saturated: a smaller instance has fewer of them",
    "io-bound": "the GPUs wait for storage, so a smaller instance would not help until reads keep up",
    "load-imbalance": "the work is spread unevenly: balance it first, then judge the instance's size",
    "straggler": "one worker holds the others back: speed it up first, then judge the instance's size",
}
NOTE_TONE = "note"
TOP = 3  # findings, and links per finding, that At a glance shows (report.glance.TOP)


def _superseding(report: Report):
    """The first finding that makes 'a smaller instance' advice wrong, with why."""
    for finding in report.diagnosis.findings:
        if finding.counts and finding.cause in SIZE_CAUSES:
            return finding, finding.note or SIZE_CAUSES[finding.cause]
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
            note = (f"Superseded by At a glance: {straggler} is the straggler the other nodes wait for, so a "
                    "smaller instance would slow the whole job down.")
        elif title:
            note = f"Superseded by At a glance (“{title}”): {why}"
        else:
            continue
        blocks.append(Text(note, tone=NOTE_TONE, link="#at-a-glance", link_text="At a glance"))
    section.blocks = blocks


def _evidence_note(section: Section, finding) -> None:
    """The finding's evidence at the top of a section that At a glance links to for it."""
    evidence = "; ".join(finding.evidence[:2])
    section.blocks.insert(0, Text(f"At a glance links here for “{finding.title}”: {evidence}.", tone=NOTE_TONE,
                                  link="#at-a-glance", link_text="At a glance"))


def reconcile(report: Report) -> None:
    """Mark superseded advice and put each finding's evidence where At a glance sends the reader."""
    if report.diagnosis is None:
        return
    finding, why = _superseding(report)
    straggler = _straggler_node(report)
    for section in report.sections:
        _mark_advice(section, finding.title if finding is not None else None, why, straggler)
    shown = {s.id: s for s in report.sections if not s.hidden}
    for finding in reversed(report.diagnosis.findings[:TOP]):  # the first finding's note ends up on top
        for section_id in [s for s in finding.sections if s in shown][:TOP]:  # the links At a glance shows
            _evidence_note(shown[section_id], finding)
