"""What is wrong with this job, what it costs, and the one thing to change.

``diagnose(outputs, price_per_hour=..., instance_count=...)`` is a pure function over what the report
already read (rule outputs, timeline.json, kineto.json) plus the job's price when known. It returns a
``Diagnosis``: a status (``healthy`` / ``problems`` / ``insufficient-data``) and root-cause findings from a
fixed vocabulary (``causes.CAUSES``), ordered by impact. Each cause is one detector in ``causes.py``;
the numbers they read are gathered in ``evidence.py``; which rules could be judged at all is
``evaluation.py``. The decision logic is documented in docs/diagnosis.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reportgen.diagnosis import account_causes  # noqa: F401  (registers the step-time account's detectors)
from reportgen.diagnosis import gpu_causes  # noqa: F401  (registers the GPU causes' detectors)
from reportgen.diagnosis import memory_causes  # noqa: F401  (registers the memory causes' detectors)
from reportgen.diagnosis import thread_causes  # noqa: F401  (registers the process's other threads' detector)
from reportgen.diagnosis.causes import BY_ID, CAUSES, MINOR, TITLES, Finding, run_order
from reportgen.diagnosis.coverage import LABELS, Answer, judge
from reportgen.diagnosis.explained import fired_without_finding
from reportgen.diagnosis.evaluation import FIRED, NOT_EVALUATED, PASSED, evaluate_rule
from reportgen.diagnosis.evidence import Evidence, gather
from reportgen.diagnosis.profiler_cost import is_xspace, window_note
from reportgen.rule_outputs import RuleOutputs

__all__ = ["CAUSES", "TITLES", "Diagnosis", "Finding", "diagnose", "evaluate_rule", "FIRED", "PASSED",
           "NOT_EVALUATED", "STATUSES", "rule_states"]

HEALTHY, PROBLEMS, INSUFFICIENT = "healthy", "problems", "insufficient-data"
# Every cause's detector, in the registry's order (checked here, at import: a cause without a detector or
# one that reads a later cause fails at once).
RUN_ORDER = run_order()
STATUSES = (HEALTHY, PROBLEMS, INSUFFICIENT)


@dataclass
class Diagnosis:
    status: str
    findings: list[Finding]
    evidence: Evidence
    judged: list[str] = field(default_factory=list)  # rules that could be evaluated
    not_evaluated: dict[str, str] = field(default_factory=dict)  # rule -> why not
    not_judged: list[str] = field(default_factory=list)  # what needs more data than the report had
    answers: list[Answer] = field(default_factory=list)  # the questions that matter, judged or not (coverage)
    unexplained: dict[str, str] = field(default_factory=dict)  # fired rule tied to no finding -> why no action

    @property
    def quality_notes(self) -> list[str]:
        """Evidence the findings set aside, and why, and a profiled window unlike the loop (the page's Data quality
        lists them)."""
        ev = self.evidence
        window = window_note(ev.profiler_overhead, any(is_xspace(r) for r in ev.trace_ranks.values()))
        return [f.quality for f in self.findings if f.quality] + ([window] if window else [])

    @property
    def questions_judged(self) -> list[str]:
        return [a.question for a in self.answers if a.judged]

    @property
    def questions_open(self) -> list[Answer]:
        return [a for a in self.answers if a.judged is False]

    def could_judge(self, cause: str) -> bool:
        """Whether this data could show the cause: the question it answers was judged."""
        question = BY_ID[cause].question if cause in BY_ID else "gpu-use"
        return any(a.judged for a in self.answers if a.question == question)

    def coverage_text(self) -> str:
        """"Judged: GPU use, memory. Not judged: step times (why)." for the page and the summaries."""
        judged = [LABELS[a.question] for a in self.answers if a.judged]
        text = f"Judged: {', '.join(judged)}." if judged else "Nothing could be judged."
        open_ = [f"{LABELS[a.question]} ({a.how})" for a in self.questions_open]
        return text + (f" Not judged: {'; '.join(open_)}." if open_ else "")

    def _loop_data(self) -> dict:
        """A recording's job account around its training loop: where the loop began and ended (epoch s) and how
        each end was found, the loop less the profiler's export, the start-up before it and the shutdown after."""
        ev = self.evidence
        start, end = ev.loop if ev.loop is not None else (None, None)
        began, ended = ev.loop_marks or ("", "")
        return {"start_s": start, "end_s": end, "seconds": ev.loop_s, "startup_s": ev.init_s,
                "shutdown_s": ev.shutdown_s, "start_from": began, "end_from": ended}

    def to_data(self) -> dict:
        """The ``diagnosis`` object of report.json (docs/report-json.md)."""
        return {
            "status": self.status,
            "findings": [{
                "cause": f.cause, "title": f.title,
                "impact": {"seconds": f.seconds, "share": f.share, "cost": f.cost, "share_of": f.base,
                           "loop_share": f.loop_share, "basis": f.basis or None,
                           **({"risk": f.risk} if f.risk else {})},
                "evidence": list(f.evidence), "fix": f.fix, "rules": list(f.rules), "sections": list(f.sections),
                "note": f.note or None, "metrics": f.metrics, "serious": f.counts,
            } for f in self.findings],
            "rules": {"evaluated": list(self.judged), "not_evaluated": dict(self.not_evaluated)},
            "not_judged": list(self.not_judged),
            "questions": [a.to_data() for a in self.answers],
            "fired_without_finding": dict(self.unexplained),
            "duration_s": self.evidence.duration_s,
            **({"profiler_export_s": self.evidence.profiler_export_s}
               if self.evidence.profiler_export_s is not None else {}),
            **({"loop": self._loop_data()} if self.evidence.loop_marks is not None else {}),
            **({"profiler_overhead": self.evidence.profiler_overhead.to_data()}
               if self.evidence.profiler_overhead is not None else {}),
        }


def rule_states(outputs: RuleOutputs) -> dict[str, tuple[str, str]]:
    """(state, reason) of every rule that can fire: ``fired`` / ``passed`` / ``not_evaluated``."""
    return gather(outputs).states


def _order(findings: list[Finding]) -> list[Finding]:
    """By impact: findings that cost at least MINOR of the job first (largest share first), with those that count
    against the job whatever their price (evidence set aside: the GPUs idle for some other reason); then risks that
    cost no time yet (GPU memory), so one comes first when nothing else costs time; then minor ones."""
    costly = sorted((f for f in findings if f.risk is None and (f.share >= MINOR or f.counts)), key=lambda f: -f.share)
    risks = sorted((f for f in findings if f.risk is not None), key=lambda f: not f.counts)
    minor = sorted((f for f in findings if f.risk is None and f.share < MINOR and not f.counts), key=lambda f: -f.share)
    return costly + risks + minor


def diagnose(outputs: RuleOutputs, *, price_per_hour: float | None = None, instance_count: int | None = None,
             job_cost: float | None = None) -> Diagnosis:
    """Root causes of this job's symptoms, most costly first. ``price_per_hour`` (of one instance) and
    ``instance_count`` give each finding a cost; ``job_cost`` (the whole run's, as the cost section
    computes it) takes precedence; without either ``impact.cost`` is None."""
    price_per_s = price_per_hour * (instance_count or 1) / 3600.0 if price_per_hour is not None else None
    ev = gather(outputs, price_per_s)
    if job_cost is not None and ev.duration_s:
        ev.price_per_s = job_cost / ev.duration_s
    judged = [r for r, (state, _) in ev.states.items() if state != NOT_EVALUATED]
    not_evaluated = {r: why for r, (state, why) in ev.states.items() if state == NOT_EVALUATED}
    answers = judge(ev)
    # Too little data: none of the questions that lead to a cause could be judged and there is no timeline of a
    # minute. A few seconds of utilization say nothing about a training job, so no cause is concluded from them.
    enough = any(a.judged for a in answers if a.question != "memory") or ev.timeline_ok
    found: dict[str, Finding] = {}
    for cause, detect in RUN_ORDER if enough else ():
        finding = detect(ev, {c: found[c] for c in cause.after if c in found})  # only what its row says it reads
        if finding is not None:
            found[cause.id] = finding
    findings = _order(list(found.values()))
    if any(f.counts for f in findings):
        status = PROBLEMS
    elif enough and all(a.judged is not False for a in answers):
        status = HEALTHY  # every question that applies was judged, and none showed a problem
    else:
        status = INSUFFICIENT
    return Diagnosis(status, findings, ev, judged, not_evaluated, list(ev.not_judged), answers,
                     fired_without_finding(ev, findings))
