"""Framework metrics summary: train/eval vs others, forward/backward, CPU/GPU operators, Horovod.

Three rules carry these breakdowns: OverallFrameworkMetrics for the whole job, StepOutlier for the
outlier steps and CPUBottleneck/IOBottleneck for the bottleneck moments. Each breakdown is drawn
once, here, with one bar per context; the deep dives refer back to it.
"""

from __future__ import annotations

from reportgen.formatting import pct1
from reportgen.report import charts
from reportgen.report.model import Chart, Fallback, Section, Text, chart_rows
from reportgen.report.step_account import account_blocks
from reportgen.report.trace_facts import trace_facts
from reportgen.report.util import slug
from reportgen.rule_outputs import BREAKDOWN_KEYS, FrameworkBreakdowns, RuleOutputs
from reportgen.rulebook import RuleName
from reportgen.section_ids import SectionId
from reportgen.trace_ranks import FrameworkAccounts

SECTION_ID = SectionId.FRAMEWORK_METRICS_SUMMARY
SECTION_TITLE = "Framework metrics summary"
BREAKDOWNS = tuple(zip(BREAKDOWN_KEYS, ("TRAIN/EVAL phases and others", "Forward vs backward pass",
                                       "CPU vs GPU operators", "General framework operations", "Horovod operations")))
# (rule, context label): the rules whose outputs carry framework breakdowns when they fired.
CONTEXTS = ((RuleName.STEP_OUTLIER, "Outlier steps"), (RuleName.CPU_BOTTLENECK, "CPU bottleneck moments"),
            (RuleName.IO_BOTTLENECK, "I/O bottleneck moments"))


def _max_item(values: dict) -> tuple[str, float]:
    key = max(values, key=values.get)
    return key, values[key]


def _contexts(outputs: RuleOutputs) -> dict[str, FrameworkBreakdowns]:
    """{context label: breakdowns}: the whole job first, then each rule that fired and has some."""
    found = {}
    rule = outputs.get(RuleName.OVERALL_FRAMEWORK_METRICS)
    if rule is not None:
        found["Whole job"] = FrameworkBreakdowns.of(rule.details)
    for name, label in CONTEXTS:
        other = outputs.get(name)
        if other is not None and other.triggered:
            found[label] = FrameworkBreakdowns.of(other.details)
    return {label: b for label, b in found.items() if b.charted}


def _whole_job_texts(job: FrameworkBreakdowns) -> list[Text]:
    texts = []
    phase = job.phase
    if phase:
        text = ("The share of time spent in the TRAIN and EVAL phases versus 'others' (time between "
                "steps, after one step finished and before the next one started). Most time should "
                "be spent in the training and evaluation steps.")
        others = job.others_pct
        tone = "plain"
        if others is not None and others > 25:
            text += (f" A large share, {pct1(others)}, was spent in 'others': check what happens "
                     "between steps (data loading, logging, checkpoints, synchronization).")
            tone = "finding"
        texts.append(Text(text, tone=tone))
    fwd = job.forward_backward
    if fwd:
        event, perc = _max_item(fwd)
        if perc > 70:
            texts.append(Text(f"{pct1(perc)} of the forward/backward time was spent in the {event}: the two "
                              "passes differ strongly, which may be expected (backward is usually longer) or "
                              "point at an inefficient layer.", tone="finding"))
        else:
            texts.append(Text(f"The {event} took the larger share of forward/backward time: {pct1(perc)}."))
    ratio = job.ratio
    if ratio:
        key, value = _max_item(ratio)
        texts.append(Text(f"Breakdown of training time between CPU and GPU operators: {pct1(value)} was spent in "
                          f"\u201c{key}\u201d."))
    general = job.general
    if general:
        key, value = _max_item(general)
        texts.append(Text(f"Among general framework operations, \u201c{key}\u201d took the largest share: "
                          f"{pct1(value)}."))
    horovod = job.horovod
    if horovod:
        key, value = _max_item(horovod)
        texts.append(Text(f"The most expensive Horovod operation was \u201c{key}\u201d with {pct1(value)}."))
    return texts


def _merged(texts: list[Text]) -> list[Text]:
    """Consecutive plain sentences as one paragraph (a paragraph each cost a line of space)."""
    out: list[Text] = []
    for text in texts:
        if out and text.tone == "plain" and out[-1].tone == "plain":
            out[-1] = Text(out[-1].text + " " + text.text)
        else:
            out.append(text)
    return out


def _few_slices(label: str, title: str, shares: dict) -> Text:
    """One or two shares of one context say more as a sentence than as a chart."""
    if len(shares) == 1:
        (category, value), = shares.items()
        return Text(f"{title}, {label.lower()}: all of it ({pct1(value)}) was \u201c{category}\u201d.")
    parts = [f"\u201c{category}\u201d {pct1(value)}" for category, value in shares.items()]
    return Text(f"{title}, {label.lower()}: {' and '.join(parts)}.")


def build(outputs: RuleOutputs) -> Section:
    section = Section(SECTION_ID, SECTION_TITLE)
    if outputs.get(RuleName.OVERALL_FRAMEWORK_METRICS) is None:
        return section.missing("No framework metrics output (OverallFrameworkMetrics) was found.")
    contexts = _contexts(outputs)
    facts = trace_facts(outputs)
    if "Whole job" not in contexts and facts.any:
        return section.missing(
            f"SageMaker Debugger's framework metrics were not recorded; the {facts.name} hold "
            f"{facts.steps} profiled step(s) and {facts.cpu_ops} CPU operator calls ({facts.pointer()}).")
    if "Whole job" not in contexts:
        return section.missing("No framework metrics were recorded for this job (framework profiling was off "
                               "or produced no events).")
    section.add(*_merged(_whole_job_texts(contexts["Whole job"])))
    if len(contexts) > 1:
        section.add(Text(f"Each chart compares the whole job with {', '.join(c.lower() for c in list(contexts)[1:])}."))
    drawn = []
    for key, title in BREAKDOWNS:
        rows = {label: b.shares(key) for label, b in contexts.items() if b.shares(key)}
        if not rows:
            continue
        if len(rows) == 1 and len(next(iter(rows.values()))) <= 2:
            label, shares = next(iter(rows.items()))
            # the whole job's text above names the larger share (the other is the rest) except for phases
            if not (label == "Whole job" and key != "phase"):
                section.add(_few_slices(label, title, shares))
            continue
        drawn.append(Chart(f"fw-{slug(key)}", charts.share_bars(rows, f"{title} (%)"),
                           f"{title}: bar chart (needs JavaScript); its shares:", numbers=_numbers(rows)))
    section.add(*chart_rows(drawn))
    section.data = dict(FrameworkBreakdowns.of(outputs.get(RuleName.OVERALL_FRAMEWORK_METRICS).details).listed)
    if outputs.framework_account is not None:
        accounts = FrameworkAccounts.of(outputs.framework_account)
        section.add(*_account(accounts))
        section.data["step_account"] = _account_data(accounts)
    return section


def _account_data(accounts: FrameworkAccounts) -> dict:
    """report.json's summary of the accounts (ms); the per-step figures stay in framework-account.json."""
    return {"unit": "ms", "no_operator_means": accounts.no_operator_means,
            "nodes": {node: {"perspective": a.perspective, "steps": a.steps, "step_ms": a.step_ms,
                             "slices_ms": dict(a.slices_ms),
                             "every_step_share": {name: a.every_step_share(name) for name in a.slices_ms},
                             "data_wait_named": dict(a.data_wait_named), "window": dict(a.window)}
                      for node, a in accounts.nodes.items()},
            "not_accounted": dict(accounts.not_accounted)}


def _account(accounts: FrameworkAccounts) -> list:
    """The step-time account of each training process, from its framework events (framework-account.json)."""
    blocks = account_blocks(
        accounts.nodes, block_id="framework-step-account", word="node", collapsed=True,
        how="SageMaker's framework events of each training process (smdebug's node id: the node and the process): "
            "its forward and backward passes, the DataLoader's calls and the steps around them",
        labels={"no_operator": "Outside forward and backward (loss, optimizer, other Python)"},
        after=(" smdebug records no operators outside the forward and backward passes, so the time outside them "
               "holds the loss and optimizer.step() as well as the script's own Python: it is shown, not judged as "
               "waste. Each step includes the DataLoader's call that fetched its batch just before it."
               + (f" The DataLoader's worker processes ({accounts.workers_left_out:,} events) are not in the "
                  "account: their loading overlaps the steps." if accounts.workers_left_out else "")))
    if accounts.not_accounted:
        blocks.append(Text("Not in the account: " + "; ".join(f"{node}: {why}" for node, why
                                                                in accounts.not_accounted.items()) + "."))
    return blocks


def _numbers(rows: dict[str, dict]) -> Fallback:
    """The chart's shares as a small table for readers without JavaScript."""
    categories = list(dict.fromkeys(k for shares in rows.values() for k in shares))
    return Fallback(["", *rows], [[c, *[pct1(shares[c]) if c in shares else "" for shares in rows.values()]]
                                  for c in categories])


def refer_back(details: dict, where: str) -> list[Text]:
    """For a deep dive whose rule carries framework breakdowns: one sentence on the largest share,
    and where the chart is (the framework metrics summary draws every context once)."""
    found = FrameworkBreakdowns.of(details)
    if not found.charted:
        return []
    parts = []
    general = found.general
    if general:
        key, value = _max_item(general)
        parts.append(f"among general framework operations \u201c{key}\u201d took the largest share, {pct1(value)}")
    phase = found.phase
    if phase:
        key, value = _max_item(phase)
        parts.append(f"the {key} phase took {pct1(value)} of the time")
    text = f"During {where}, " + "; ".join(parts) + "." if parts else f"Framework breakdowns of {where} exist."
    return [Text(text + " The breakdowns are charted next to the whole job's in", link=f"#sec-{SECTION_ID}",
                 link_text=SECTION_TITLE)]


__all__ = ["build", "refer_back", "slug"]
