"""The verdict: speed, throughput, utilization, cost and rules of B against A, in a few sentences."""

from __future__ import annotations

from reportgen.compare import traces
from reportgen.compare.common import signed
from reportgen.compare.regression import judge
from reportgen.compare.sections.causes import compare_causes
from reportgen.compare.side import Side
from reportgen.cost import RunCost, cost_text
from reportgen.formatting import money_text
from reportgen.report.model import Section, Text

SAME_TIME_PCT = 5.0  # durations within this many % count as "about the same"
SAME_UTIL_POINTS = 5.0  # utilization percentiles within this many points count as "about the same"


def build(a: Side, b: Side, phases: Section, usage: Section, rules: Section, ca: RunCost, cb: RunCost,
             saving: dict) -> Section:
    section = Section("verdict", "Verdict")
    sentences, data = [], {}
    da = a.summary().job_duration_s
    db = b.summary().job_duration_s
    if da is not None and db is not None:
        rel = (db - da) / da * 100 if da else 0.0
        speed = "about as fast as" if abs(rel) <= SAME_TIME_PCT else "faster than" if rel < 0 else "slower than"
        data.update(duration_a_s=da, duration_b_s=db, duration_delta_s=db - da, duration_delta_pct=rel,
                    speed=speed.replace(" than", "").replace(" as", ""))
        sentences.append(f"B ran {speed} A: {db} s against {da} s ({signed(rel, 1)} %).")
    else:
        sentences.append("The durations cannot be compared: " + " and ".join(
            f"{s.label} has no job start and end times" for s, d in ((a, da), (b, db)) if d is None) + ".")
    ta, tb = a.traces(), b.traces()
    rate = traces.throughput(ta, tb, da, db)
    data["throughput"] = rate
    if rate["job_same_work_change_pct"] is not None and (ta or tb):
        cover = " and ".join(f"{100 * t['coverage']:.1f} % of {s.label}" for s, t in ((a, ta), (b, tb))
                             if t and t.get("coverage") is not None)
        sentences.append(
            f"For the same work, that is {signed(rate['job_same_work_change_pct'], 1)} % throughput (steps and "
            f"samples per second). The profiled steps cover only {cover}: in them B runs "
            f"{signed(rate['profiled_change_pct'], 1)} % steps per second, a sample, not the job's figure.")
        data["profiled_coverage"] = {"a": (ta or {}).get("coverage"), "b": (tb or {}).get("coverage")}
    overall = {o["metric"]: o for o in usage.data.get("overall", [])}
    util = {}
    for metric in ("GPU", "CPU"):
        o = overall.get(metric)
        if not o:
            continue
        pa, pb = o["a"].get("p95"), o["b"].get("p95")
        if pa is None or pb is None:
            missing = "A" if pa is None else "B"
            sentences.append(f"{metric} utilization cannot be compared: {missing} has no {metric} data.")
            continue
        d = pb - pa
        word = "about the same" if abs(d) < SAME_UTIL_POINTS else "better" if d > 0 else "worse"
        util[metric] = {"a_p95": pa, "b_p95": pb, "delta": d, "utilization": word}
        how = (f"stayed about the same ({pa:.0f} % → {pb:.0f} %)" if word == "about the same" else
               f"{'rose' if d > 0 else 'fell'} from {pa:.0f} % to {pb:.0f} % ({word} use of the {metric}s)")
        sentences.append(f"The 95th percentile of {metric} utilization {how}.")
    data["utilization_p95"] = util
    if saving.get("saving") is not None:
        costs = f"A run of B costs {cost_text(cb.cost, cb.currency)} instead of {cost_text(ca.cost, ca.currency)}"
        pct = saving["saving_pct_from_rounded"]
        pct = pct if pct is not None else saving["saving_pct"]  # A's cost rounds to no cent
        if pct is None:
            sentences.append(f"{costs}.")
        elif saving["saving"] >= 0:
            saved = (money_text(saving['saving_rounded'], cb.currency, grouping=False) if saving["saving_rounded"] or not saving["saving"]
                     else "less than a cent")
            sentences.append(f"{costs}: {pct:.1f} % less ({saved} saved per run).")
        else:
            sentences.append(f"{costs}: {-pct:.1f} % more.")
        data["saving_pct"] = saving["saving_pct"]
        data["saving_pct_from_rounded"] = saving["saving_pct_from_rounded"]
    else:
        why = "; ".join(f"for {s.label} {r.missing()}" for s, r in ((a, ca), (b, cb)) if r.cost is None)
        sentences.append(f"Cost not compared: {why}.")
    rd = rules.data
    if rd.get("rows"):
        sentences.append(f"Rules: {len(rd['fixed'])} fixed, {len(rd['new'])} new, "
                         f"{len(rd['still_firing'])} still firing.")
    good = (saving.get("saving") or 0) > 0 or any(u["utilization"] == "better" for u in util.values())
    bad = data.get("speed") == "slower" or any(u["utilization"] == "worse" for u in util.values())
    section.add(Text(" ".join(sentences), tone="ok" if good and not bad else "finding" if bad else "plain"))
    data["text"] = " ".join(sentences)
    regression = judge(a.sections(), b.sections(), labels=("A", "B"))  # A is the base; run.py applies a threshold
    data["regression"] = regression.to_data()
    section.add(Text(regression.summary(), tone="finding" if regression.verdict in ("slower beyond noise", "cannot judge") else "plain"))
    cause_blocks, data["causes"] = compare_causes(a, b)
    section.add(*cause_blocks)
    section.data = data
    return section
