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

from reportgen.diagnosis.causes import CAUSES, DETECTORS, MINOR, TITLES, Finding
from reportgen.diagnosis.evaluation import FIRED, NOT_EVALUATED, PASSED, evaluate_rule
from reportgen.diagnosis.evidence import Evidence, gather
from reportgen.rule_outputs import RuleOutputs

__all__ = ["CAUSES", "TITLES", "Diagnosis", "Finding", "diagnose", "evaluate_rule", "FIRED", "PASSED",
           "NOT_EVALUATED", "STATUSES", "rule_states"]

HEALTHY, PROBLEMS, INSUFFICIENT = "healthy", "problems", "insufficient-data"
STATUSES = (HEALTHY, PROBLEMS, INSUFFICIENT)


@dataclass
class Diagnosis:
    status: str
    findings: list[Finding]
    evidence: Evidence
    judged: list[str] = field(default_factory=list)  # rules that could be evaluated
    not_evaluated: dict[str, str] = field(default_factory=dict)  # rule -> why not
    not_judged: list[str] = field(default_factory=list)  # what needs more data than the report had

    def finding_for_rule(self, rule: str) -> Finding | None:
        """The first (most costly) finding that a rule's symptom belongs to."""
        return next((f for f in self.findings if rule in f.rules), None)

    def to_data(self) -> dict:
        """The ``diagnosis`` object of report.json (docs/report-json.md)."""
        return {
            "status": self.status,
            "findings": [{
                "cause": f.cause, "title": f.title,
                "impact": {"seconds": f.seconds, "share": f.share, "cost": f.cost,
                           **({"risk": f.risk} if f.risk else {})},
                "evidence": list(f.evidence), "fix": f.fix, "rules": list(f.rules), "sections": list(f.sections),
                "note": f.note or None, "metrics": f.metrics, "serious": f.counts,
            } for f in self.findings],
            "rules": {"evaluated": list(self.judged), "not_evaluated": dict(self.not_evaluated)},
            "not_judged": list(self.not_judged),
            "duration_s": self.evidence.duration_s,
        }


def rule_states(outputs: RuleOutputs) -> dict[str, tuple[str, str]]:
    """(state, reason) of every rule that can fire: ``fired`` / ``passed`` / ``not_evaluated``."""
    return gather(outputs).states


def _order(findings: list[Finding]) -> list[Finding]:
    """By impact: findings that cost at least MINOR of the job first (largest share first); then risks that
    cost no time yet (GPU memory), so one comes first when nothing else costs time; then minor ones."""
    costly = sorted((f for f in findings if f.risk is None and f.share >= MINOR), key=lambda f: -f.share)
    risks = sorted((f for f in findings if f.risk is not None), key=lambda f: not f.counts)
    minor = sorted((f for f in findings if f.risk is None and f.share < MINOR), key=lambda f: -f.share)
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
    # Too little data: no rule could judge, no timeline of a minute, no profiled step. A few seconds of
    # utilization say nothing about a training job, so no cause is concluded from them.
    # (MaxInitializationTime alone does not count: a first step within 20 minutes says nothing about use.)
    enough = (set(judged) - {"MaxInitializationTime"} or ev.timeline_ok
              or any(r.get("steps") for r in ev.kineto.values()))
    found: dict[str, Finding] = {}
    for cause, detect in DETECTORS if enough else ():
        finding = detect(ev, found)
        if finding is not None:
            found[cause] = finding
    findings = _order(list(found.values()))
    if not enough:
        status = INSUFFICIENT
    elif any(f.counts for f in findings):
        status = PROBLEMS
    else:
        status = HEALTHY
    return Diagnosis(status, findings, ev, judged, not_evaluated, list(ev.not_judged))
