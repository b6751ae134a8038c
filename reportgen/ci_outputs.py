"""The report as CI output: JUnit XML of the rules, a Markdown summary, and the ``--fail-on`` verdict.

Everything here works from ``report.json``'s data (the numbers of the report, written by the notebook),
so it runs right after ``generate`` and, through ``reportgen check``, on any report.json written before.
Older 1.0 files lack the rows' ``status`` and ``finding``: they are derived from the same counts.
"""

from __future__ import annotations

import math
import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from reportgen.diagnosis import causes as cause_registry  # the package imports every detector module
from reportgen.diagnosis.causes import MINOR
from reportgen.diagnosis.evaluation import FIRED, NOT_EVALUATED, STATES, evaluate_rule
from reportgen.errors import InputError
from reportgen.formatting import binary_bytes, human_duration, money_text
from reportgen.output_set import OutputSet
from reportgen.report.efficiency import RunEfficiency, flops_rate, mfu_text
from reportgen.report.json_views import Finding, ReportJson
from reportgen.report.rule_texts import finding as finding_text, recommend
from reportgen.report.views import JobSummary, RuleRow, UsageRow, rule_rows_of, usage_rows_of
from reportgen.rulebook import CHECKED_RULES
from reportgen.section_ids import SectionId
from reportgen.terminal_text import printable

# Rules that can fire (the two usage summaries never do): what --fail-on accepts.
SUITE = "reportgen.rules"


# ------------------------------------------------------------------------------------------ data


@dataclass
class RuleResult:
    rule: str
    status: str  # fired | passed | not_evaluated
    times_triggered: int
    violations: int
    datapoints: int
    parameters: list[tuple[str, str]] = field(default_factory=list)
    finding: str = ""
    recommendation: str = ""
    reason: str = ""  # why it was not evaluated
    cause: Finding | None = None  # the diagnosis finding this rule's symptom belongs to


def _int(value) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return int(value)
    return 0


def _text(value) -> str:
    return "" if value is None else str(value)


def _parameters(text: str) -> list[tuple[str, str]]:
    pairs = []
    for line in _text(text).splitlines():
        if ":" in line:
            key, _, value = line.partition(":")
            pairs.append((key.strip(), value.strip()))
        elif line.strip():
            pairs.append((line.strip(), ""))
    return pairs


def _state(row: RuleRow, rule: str, triggered: int, datapoints: int, parameters) -> tuple[str, str]:
    """The row's own status when it agrees with its counts (fired exactly when it triggered); a 1.1
    ``no_data`` is ``not_evaluated``; anything else is derived from counts and parameters."""
    status = _text(row.status)
    status = NOT_EVALUATED if status == "no_data" else status
    if status in STATES and (status == FIRED) == (triggered > 0):
        reason = _text(row.not_evaluated_reason) if status == NOT_EVALUATED else ""
        if status == NOT_EVALUATED and not reason:
            reason = evaluate_rule(rule, triggered, datapoints, parameters)[1] or "too little data"
        return status, reason
    return evaluate_rule(rule, triggered, datapoints, parameters)


def rule_results(data: ReportJson | dict) -> list[RuleResult]:
    """One result per row of the rules summary, in the report's order (most triggered first)."""
    report = ReportJson.of(data)
    section = report.sections.get(SectionId.RULES_SUMMARY_SECTION)
    findings = report.findings
    results = []
    for row in rule_rows_of(section):
        if row.rule is None:
            continue
        rule = row.rule
        triggered, violations, datapoints = _int(row.times_triggered), _int(row.violations), _int(row.datapoints)
        parameters = _parameters(row.parameters)
        status, reason = _state(row, rule, triggered, datapoints, parameters)
        text = _text(row.finding)
        if not text or (status == NOT_EVALUATED and _text(row.status) == "no_data"):
            text = finding_text(rule, triggered, violations, datapoints, status, reason)
        results.append(RuleResult(
            rule=rule,
            status=status,
            times_triggered=triggered,
            violations=violations,
            datapoints=datapoints,
            parameters=parameters,
            finding=text,
            recommendation=_text(row.recommendation) or recommend(rule),
            reason=reason,
            cause=next((f for f in findings if rule in f.rules), None),
        ))
    return results


# ------------------------------------------------------------------------------------------ --fail-on

# Diagnosis statuses --fail-on can name ("healthy" never fails a run).
STATUS_GATES = ("problems", "insufficient-data")


def known_causes() -> tuple[str, ...]:
    """The diagnosis vocabulary, read from the cause registry (never a copy: new causes gate at once)."""
    return tuple(dict.fromkeys([*cause_registry.CAUSES, *(cause.id for cause in cause_registry.REGISTRY)]))


@dataclass(frozen=True)
class FailOn:
    """What ``--fail-on`` listed: ``any`` fired rule, diagnosis statuses, causes and rules."""

    any_rule: bool = False
    statuses: tuple[str, ...] = ()
    causes: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.any_rule or self.statuses or self.causes or self.rules)


def parse_fail_on(text: str | None) -> FailOn:
    """``none`` (default), ``any`` (any rule fired), or a comma-separated mix of statuses (``problems``,
    ``insufficient-data``), causes (``input-pipeline``...) and rules (``LowGPUUtilization``...), matched
    case-insensitively. An unknown name is a usage error: a typo must not silently turn a check off."""
    value = (text or "none").strip()
    if value.lower() in ("none", ""):
        return FailOn()
    if value.lower() == "any":
        return FailOn(any_rule=True)
    causes = known_causes()
    vocabulary = {name.lower(): (kind, name) for kind, names in
                  (("rule", CHECKED_RULES), ("cause", causes), ("status", STATUS_GATES)) for name in names}
    picked: dict[str, list[str]] = {"status": [], "cause": [], "rule": []}
    unknown = []
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        if part.lower() in vocabulary:
            kind, name = vocabulary[part.lower()]
            if name not in picked[kind]:
                picked[kind].append(name)
        else:
            unknown.append(part)
    if unknown or not any(picked.values()):
        bad = ", ".join(unknown) if unknown else repr(value)
        alone = " (any and none stand alone)" if any(u.lower() in ("any", "none") for u in unknown) else ""
        raise InputError(f"--fail-on: unknown name {bad}{alone}; expected any, none or a comma-separated list of "
                         f"statuses ({', '.join(STATUS_GATES)}), causes ({', '.join(causes)}) and rules "
                         f"({', '.join(CHECKED_RULES)})")
    return FailOn(statuses=tuple(picked["status"]), causes=tuple(picked["cause"]), rules=tuple(picked["rule"]))


@dataclass
class Tripped:
    """What made ``--fail-on`` fail the run, in the report's order."""

    status: str = ""
    causes: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.status or self.causes or self.rules)

    def message(self) -> str:
        """``--fail-on tripped: status problems; causes found: input-pipeline; rules fired: StepOutlier``"""
        parts = ([f"status {self.status}"] if self.status else []) + (
            [f"{'cause' if len(self.causes) == 1 else 'causes'} found: {', '.join(self.causes)}"]
            if self.causes else []) + ([f"{'rule' if len(self.rules) == 1 else 'rules'} fired: "
                                        f"{', '.join(self.rules)}"] if self.rules else [])
        return "--fail-on tripped: " + "; ".join(parts)


def serious(finding: Finding) -> bool:
    """Does this finding make the job unhealthy? report.json's ``serious``; a report.json written before it
    had the field: a share of at least 5 % of the job, or a risk (judged the cautious way)."""
    if finding.serious is not None:
        return finding.serious
    share = finding.impact.share
    return finding.impact.risk is not None or (share is not None and share >= MINOR)


def tripped(data: ReportJson | dict, fail_on: FailOn | str) -> Tripped:
    """What ``fail_on`` lists that this report shows: its status, causes the diagnosis found that make the
    job unhealthy (a minor finding does not fail a healthy job), fired rules (all of them for ``any``)."""
    fail_on = parse_fail_on(fail_on) if isinstance(fail_on, str) else fail_on
    if not fail_on:
        return Tripped()
    report = ReportJson.of(data)
    found = list(dict.fromkeys(f.cause for f in report.findings if serious(f)))
    return Tripped(status=report.status if report.status in fail_on.statuses else "",
                   causes=[c for c in found if c in fail_on.causes],
                   rules=[r.rule for r in rule_results(report)
                          if r.status == FIRED and (fail_on.any_rule or r.rule in fail_on.rules)])


# ------------------------------------------------------------------------------------------ JUnit XML

# Characters XML 1.0 cannot carry at all, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _x(value) -> str:
    """Text for an XML attribute or element; ElementTree escapes &, <, >, quotes and newlines; controls and
    bidi overrides shown as escapes (``terminal_text``: CI logs print these messages)."""
    return _NOT_XML.sub("\ufffd", printable(_text(value), lines=True))


CAUSE_SUITE = "reportgen.causes"


def _counts(cases: list[str]) -> dict:
    return {"tests": str(len(cases)), "failures": str(cases.count("failure")), "errors": "0",
            "skipped": str(cases.count("skipped")), "time": "0"}


@dataclass(frozen=True)
class ExtraCase:
    """A gate of the command's own beside the rules and causes (``check --base``'s regression gate), as one
    JUnit test case in a suite of its own: ``state`` "failure", "skipped" (with ``message`` as the reason) or
    "passed" (with ``message`` in ``<system-out>``); ``kind`` is the failure's type."""

    suite: str
    name: str
    state: str
    message: str
    kind: str = "Failure"


def junit_xml(data: ReportJson | dict, extra: ExtraCase | None = None) -> bytes:
    """One ``<testcase>`` per rule: ``<failure>`` when it fired (led by the diagnosed cause and its fix),
    ``<skipped>`` when it was not evaluated; and one per cause of the diagnosis vocabulary (when the
    report has a diagnosis): ``<failure>`` when found and serious (a minor one passes, with what was found in
    ``<system-out>``), ``<skipped>`` when the data was too little to judge; then ``extra``, when given."""
    report = ReportJson.of(data)
    results = rule_results(report)
    rule_cases = ["failure" if r.status == FIRED else "skipped" if r.status == NOT_EVALUATED else "passed"
                  for r in results]
    causes = cause_results(report)
    cause_cases = [state for _, state, _ in causes]
    extra_cases = [extra.state] if extra is not None else []
    root = ET.Element("testsuites", {"name": "reportgen", **_counts(rule_cases + cause_cases + extra_cases)})
    suite = ET.SubElement(root, "testsuite", {"name": SUITE, **_counts(rule_cases)})
    props = ET.SubElement(suite, "properties")
    for name, value in (("job", report.job_name), ("schema_version", report.schema_version),
                        ("reportgen_version", report.reportgen_version), ("generated_at", report.generated_at)):
        ET.SubElement(props, "property", {"name": name, "value": _x(value)})
    use = RunEfficiency.of_sections(report.sections)
    for name, value in (("achieved_tflops", use.achieved_tflops), ("mfu", use.mfu),
                        ("memory_device", use.memory_device), ("peak_allocated_bytes", use.peak_allocated_bytes),
                        ("peak_reserved_bytes", use.peak_reserved_bytes),
                        ("memory_growth_per_step_bytes", use.growth_per_step_bytes)):
        if value is not None:  # from the traces' FLOP counts and memory events, when they have them
            ET.SubElement(props, "property", {"name": name, "value": _x(value)})
    for r in results:
        case = ET.SubElement(suite, "testcase", {"classname": SUITE, "name": _x(r.rule), "time": "0"})
        case_props = ET.SubElement(case, "properties")
        for name, value in (("times_triggered", r.times_triggered), ("violations", r.violations),
                            ("datapoints", r.datapoints)):
            ET.SubElement(case_props, "property", {"name": name, "value": str(value)})
        for key, value in r.parameters:
            ET.SubElement(case_props, "property", {"name": _x(f"parameter.{key}"), "value": _x(value)})
        if r.status == FIRED:
            lead = cause_line(r.cause, report.currency) if r.cause else r.finding
            failure = ET.SubElement(case, "failure", {"message": _x(lead), "type": "RuleFired"})
            body = [lead]
            if r.cause:
                body += [f"Fix: {r.cause.fix}", f"Evidence: {'; '.join(r.cause.evidence)}", f"Rule: {r.finding}"]
            elif r.recommendation:
                body.append(f"Recommendation: {r.recommendation}")
            failure.text = _x("\n".join(body))
        elif r.status == NOT_EVALUATED:
            ET.SubElement(case, "skipped", {"message": _x(f"not evaluated: {r.reason}" if r.reason else r.finding)})
    if causes:
        cause_suite = ET.SubElement(root, "testsuite", {"name": CAUSE_SUITE, **_counts(cause_cases)})
        for cause, state, finding in causes:
            case = ET.SubElement(cause_suite, "testcase", {"classname": CAUSE_SUITE, "name": _x(cause), "time": "0"})
            details = [] if finding is None else [
                cause_line(finding), f"Evidence: {'; '.join(finding.evidence)}",
                f"Rules: {', '.join(finding.rules) or 'none'}"]
            if state == "failure" and finding is not None:
                failure = ET.SubElement(case, "failure", {"message": _x(cause_line(finding)), "type": "CauseFound"})
                failure.text = _x("\n".join(details))
            elif finding is not None:  # found, but minor: passed, with what was found
                ET.SubElement(case, "system-out").text = _x("\n".join(["Minor (under 5 % of the job, does not make "
                                                                       "it unhealthy):", *details]))
            elif state == "skipped":
                ET.SubElement(case, "skipped", {"message": "not judged: too little data (status insufficient-data)"})
    if extra is not None:
        extra_suite = ET.SubElement(root, "testsuite", {"name": extra.suite, **_counts(extra_cases)})
        case = ET.SubElement(extra_suite, "testcase", {"classname": extra.suite, "name": _x(extra.name), "time": "0"})
        if extra.state == "failure":
            ET.SubElement(case, "failure", {"message": _x(extra.message), "type": extra.kind}).text = _x(extra.message)
        elif extra.state == "skipped":
            ET.SubElement(case, "skipped", {"message": _x(extra.message)})
        else:
            ET.SubElement(case, "system-out").text = _x(extra.message)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def cause_results(report: ReportJson) -> list[tuple[str, str, Finding | None]]:
    """(cause, failure | skipped | passed, its finding) for every cause of the vocabulary, plus any other
    cause the report names (a newer reportgen's); none for a report.json without a diagnosis."""
    if report.diagnosis is None:
        return []
    findings: dict[str, Finding] = {}
    for finding in report.findings:
        findings.setdefault(finding.cause, finding)
    insufficient = report.status == "insufficient-data"
    return [(cause, "failure" if cause in findings and serious(findings[cause]) else
             "skipped" if insufficient else "passed", findings.get(cause))
            for cause in dict.fromkeys([*known_causes(), *findings])]


# ------------------------------------------------------------------------------------------ Markdown

# Characters that start inline markup anywhere in a line (emphasis, code, links, images, tables,
# strike-through, references and mentions). Line-start markup (#, -, +, 1.) needs no care: data text is
# never placed at the start of a line.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~#!@])")


NAME_CHARS = 120  # a job or node name longer than this is cut in the Markdown summary (report.json keeps it whole)


def md(value, limit: int | None = None) -> str:
    """Data text made inert for inline use in Markdown: one line, HTML escaped, markup characters
    backslash-escaped, no autolinks, controls and bidi overrides shown as escapes (``terminal_text``); cut
    to ``limit`` characters (with an ellipsis) when given."""
    text = printable(" ".join(_text(value).split()))
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return text.replace("://", "&#58;//").replace("www.", "www&#46;")


def _num(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    return f"{value:.2f}"


def _duration(seconds) -> str:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        return "unknown"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    human = (f"{hours} h {minutes} min" if hours else f"{minutes} min {secs} s" if minutes else f"{secs} s")
    return f"{seconds} s ({human})" if seconds >= 60 else human


def _impact(finding: Finding, currency: str = "USD") -> str:
    impact = finding.impact
    risk = impact.risk
    if risk is not None:
        parts = [f"grows {binary_bytes(risk.per_step_bytes)} per step"] if risk.per_step_bytes_listed else []
        if risk.time_to_full_s is not None:
            parts.append(f"full in {_duration(risk.time_to_full_s)} at this rate")
        # how full the GPU memory was, and (SageMaker's GPUMemoryUtilization) how busy, never as how full
        for value, words in ((risk.peak_pct, "peak {:.0f} % of GPU memory"),
                             (risk.peak_activity_pct, "peak memory-controller activity {:.0f} %")):
            if value is not None:
                parts.append(words.format(value))
        return "risk, no time lost yet" + (f" ({', '.join(parts)})" if parts else "")
    share, seconds, cost = impact.share, impact.seconds, impact.cost
    # from a minute on whole seconds truncated, as the page says it (causes.secs): one number in every output
    text = (f"about {human_duration(int(seconds) if seconds >= 60 else seconds)}"
            if seconds is not None else "impact unknown")
    loop, of = impact.loop_share, impact.share_of
    if share is not None:
        whole = "of the profiled steps" if of == "profiled steps" else "of the job"
        loop_text = f"{loop * 100:.0f} % of the training loop, " if loop is not None and of != "profiled steps" else ""
        text += f" ({loop_text}{share * 100:.0f} % {whole})"
    if cost is not None:
        text += f", about {money_text(cost, currency)}"
    return text


def cause_line(finding: Finding, currency: str = "USD") -> str:
    """``input-pipeline: The input pipeline starves the GPUs, about 452 s (58 % of the job). Fix: ...``"""
    return f"{finding.cause}: {finding.headline}, {_impact(finding, currency)}. Fix: {finding.fix}"


KEY_METRICS = ("CPU", "GPU")
KEY_PERCENTILES = ("p50", "p95", "p99")


def node_percentiles(report: ReportJson) -> list[tuple[str, dict[str, UsageRow]]]:
    """[(node, {metric: row})] for the key metrics, nodes in the order of the system usage table."""
    nodes: dict[str, dict[str, UsageRow]] = {}
    for row in usage_rows_of(report.sections.get(SectionId.SYSTEM_USAGE_STATISTICS)):
        if row.metric in KEY_METRICS:
            nodes.setdefault(row.node, {})[row.metric] = row
    return list(nodes.items())


STATUS_WORDS = {"healthy": "healthy", "problems": "problems found", "insufficient-data": "insufficient data"}


def verdict_lines(report: ReportJson) -> list[str]:
    """The diagnosis first: status, then the top findings with their fix (nothing for an old report.json)."""
    if report.diagnosis is None:
        return []
    status = report.status
    lines = [f"**Status: {md(STATUS_WORDS.get(status, status))}**", ""]
    findings = report.findings
    if status == "insufficient-data":
        lines += ["Nothing could be judged: too little data for any rule or utilization check.", ""]
    for number, finding in enumerate(findings[:3], 1):
        lines += [f"{number}. **{md(finding.headline)}** "
                  f"(`{md(finding.cause)}`), {md(_impact(finding, report.currency))}",
                  f"   - Fix: {md(finding.fix)}",
                  f"   - Evidence: {md('; '.join(finding.evidence))}"]
    if findings:
        lines.append("")
    return lines


def hardware_lines(data: ReportJson | dict) -> list[str]:
    """The traces' use of the hardware (achieved TFLOP/s, MFU, memory peaks: ``report.efficiency``), none
    when the traces have no FLOP counts or memory events."""
    use = RunEfficiency.of_sections(ReportJson.of(data).sections)
    parts = [f"Compute: {use.compute_text()}" if use.compute_text() else "",
             f"Memory: {use.memory_text()}" if use.memory_text() else ""]
    parts = [md(p) for p in parts if p]
    return [f"{'. '.join(parts)} (from the profiler traces).", ""] if parts else []


def hardware_change_lines(base: ReportJson | dict, data: ReportJson | dict) -> list[str]:
    """``check --base``: the traces' use of the hardware, the base's against this run's (FLOP/s, MFU, memory
    peaks: ``report.efficiency``), where either run's traces have them; none otherwise."""
    was, now = (RunEfficiency.of_sections(ReportJson.of(d).sections) for d in (base, data))
    if not (was.known or now.known):
        return []
    parts = []
    for title, a, b, shown in (
            ("FLOP/s per rank", was.achieved_tflops, now.achieved_tflops, flops_rate),
            ("MFU", was.mfu, now.mfu, mfu_text),
            (f"peak {now.memory_device or was.memory_device} memory allocated", was.peak_allocated_bytes,
             now.peak_allocated_bytes, binary_bytes)):
        if a is None and b is None:
            continue
        if title.startswith("peak") and None not in (was.memory_device, now.memory_device) \
                and was.memory_device != now.memory_device:
            continue  # a GPU's peak is not set against a CPU's
        change = f" ({(b - a) / a * 100:+.1f} %)".replace("-", "−") if a and b is not None else ""
        parts.append(f"{title} {shown(a) if a is not None else 'not in its traces'} → "
                     f"{shown(b) if b is not None else 'not in its traces'}{change}")
    return [f"Use of the hardware, the base's → this run's: {md('; '.join(parts))}.", ""] if parts else []


def markdown_summary(data: ReportJson | dict, extra: str = "") -> str:
    """A compact, link-free summary: job, duration, key percentiles per node, rules that fired; ``extra``
    (already Markdown, e.g. the regression check against a base run) right after the verdict."""
    report = ReportJson.of(data)
    lines = [f"## Profiling report: {md(report.job_name or 'unnamed job', NAME_CHARS)}", ""]
    if report.incomplete:
        lines += ["The job was still running: the report covers the data written so far.", ""]
    lines += verdict_lines(report)
    if extra:
        lines += [extra.rstrip("\n"), ""]

    if not report.duration_listed:
        lines += ["Job duration: unknown (no system or framework timestamps).", ""]
    else:
        summary = JobSummary.of(report.sections.get(SectionId.TRAINING_JOB_SUMMARY))
        parts = [f"{label} {human_duration(value) or 'unknown'}" for label, value in
                 (("initialization", summary.initialization_s), ("training loop", summary.training_loop_duration_s),
                  ("finalization", summary.finalization_s)) if value is not None]
        lines += [f"Job duration: {_duration(summary.job_duration_s)}"
                  + (f"; {', '.join(parts)}." if parts else "."), ""]

    lines += hardware_lines(report)

    nodes = node_percentiles(report)
    if nodes:
        header = [f"{m} {p}" for m in KEY_METRICS for p in KEY_PERCENTILES]
        lines += ["Utilization per node, in percent:", "",
                  "| Node | " + " | ".join(header) + " |",
                  "|---|" + "---:|" * len(header)]
        for node, metrics in nodes:
            cells = [_num(metrics[m].stat(p) if m in metrics else None) for m in KEY_METRICS for p in KEY_PERCENTILES]
            lines.append(f"| {md(node, NAME_CHARS)} | " + " | ".join(cells) + " |")
        lines.append("")
    else:
        lines += ["No system usage statistics were recorded.", ""]

    results = rule_results(report)
    fired = [r for r in results if r.status == FIRED]
    skipped = [r for r in results if r.status == NOT_EVALUATED]
    evaluated = len(results) - len(skipped)
    if not results:
        lines += ["No rule outputs were found.", ""]
    elif not fired:
        lines += [f"None of the {evaluated} evaluated rules fired." if evaluated else
                  "No rule could be evaluated.", ""]
    else:
        lines += [f"**{len(fired)} of the {evaluated} evaluated rules fired:**", "",
                  "| Rule | Times | Recommendation |", "|---|---:|---|"]
        for r in fired:
            lines.append(f"| {md(r.rule)} | {r.times_triggered} | {md(r.recommendation)} |")
        lines.append("")
    passed = [md(r.rule) for r in results if r.status == "passed"]
    if passed and fired:
        lines += [f"Did not fire: {', '.join(passed)}.", ""]
    if skipped:
        lines += [f"Not evaluated: {', '.join(f'{md(r.rule)} ({md(r.reason)})' for r in skipped)}.", ""]

    problems = report.data_quality_problems
    if problems:
        lines += [f"Data quality: {problems} problem(s) while reading the input (listed in the report).", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


# ------------------------------------------------------------------------------------------ writing


@dataclass
class CIOutcome:
    written: list[Path]
    tripped: Tripped  # what --fail-on listed that the report shows: exit code 1 when not empty


STEP_SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"  # GitHub Actions' step summary file, appended to when set


def ci_output_set(junit, markdown, summary_file) -> OutputSet:
    """The CI outputs as one output set, each path checked (``output_set``: against the command's inputs
    too); ``check`` makes it before it reads anything, so a clash is refused first."""
    outputs = OutputSet()
    if junit:
        outputs.add("--junit", junit)
    if markdown:
        outputs.add("--markdown", markdown)
    if summary_file:
        outputs.add_appended("$GITHUB_STEP_SUMMARY", summary_file)
    return outputs


def write_ci_outputs(data: ReportJson | dict, *, junit: Path | None = None, markdown: Path | None = None,
                     step_summary: bool = True, fail_on: FailOn | str = "none",
                     environ: dict | None = None, extra_markdown: str = "",
                     extra_case: ExtraCase | None = None) -> CIOutcome:
    """Write the requested outputs together (``output_set``: checked first, all or none; ``-`` is
    standard output); then append the Markdown to ``$GITHUB_STEP_SUMMARY`` when set."""
    environ = os.environ if environ is None else environ
    report = ReportJson.of(data)
    summary_file = environ.get(STEP_SUMMARY_VARIABLE) if step_summary else None
    outputs = ci_output_set(junit, markdown, summary_file)
    contents: dict = {}
    if junit:
        contents["--junit"] = junit_xml(report, extra_case)
    text = markdown_summary(report, extra_markdown) if markdown or summary_file else ""
    if markdown:
        contents["--markdown"] = text
    written = [t.path for t in outputs.commit(contents)]
    if summary_file:
        try:
            with open(summary_file, "a", encoding="utf-8") as handle:
                handle.write(text + "\n")
        except OSError as err:
            raise InputError(f"$GITHUB_STEP_SUMMARY ({summary_file}): cannot append "
                             f"({err.strerror or err})") from None
        written.append(Path(summary_file))
    return CIOutcome(written, tripped(report, fail_on))
