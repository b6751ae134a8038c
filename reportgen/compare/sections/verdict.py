"""The verdict: speed, throughput, utilization, cost and rules of B against A, in a few sentences."""

from __future__ import annotations

from reportgen.compare import comparability, traces, work
from reportgen.compare.sections.utilization import overall_of
from reportgen.compare.common import signed
from reportgen.compare.regression import MIN_STEPS, STEP_BASES, judge
from reportgen.compare.sections.causes import compare_causes
from reportgen.compare.side import Side
from reportgen.cost import RunCost, cost_text
from reportgen.formatting import money_text
from reportgen.report.json_views import JobCpu
from reportgen.report.model import Section, Text
from reportgen.report.util import number

SAME_TIME_PCT = 5.0  # durations within this many % count as "about the same"
SAME_UTIL_POINTS = 5.0  # utilization percentiles within this many points count as "about the same"


def build(a: Side, b: Side, rules: Section, ca: RunCost, cb: RunCost, saving: dict, force: bool = False) -> Section:
    section = Section("verdict", "Verdict")
    sentences, data = [], {}
    speed_word = None  # "faster", "slower" or "about fast" (data's speed), when judged
    fit = comparability.check(a, b, force)
    data["comparability"] = fit.to_data()
    if not fit.comparable and not force:  # unrelated runs: side by side, but no verdict and no gate
        text = (f"Not comparable because {fit.because()}. The sections below show both runs side by side; no "
                "verdict is given and the regression gate cannot judge them (reportgen compare --force compares "
                "anyway).")
        section.add(Text(text, tone="finding"))
        regression = judge({}, {}, labels=("A", "B"))
        regression.unjudged = f"not comparable because {fit.because()} (--force compares anyway)"
        data.update(text=text, regression=regression.to_data(), speed=None)
        section.data = data
        return section
    if not fit.comparable:
        sentences.append(f"Compared with --force although {fit.because()}.")
    if fit.changes:
        sentences.append(f"Between the runs: {', '.join(fit.changes)}; the changes below include its effect.")
    da = a.summary().job_duration_s
    db = b.summary().job_duration_s
    wa, wb = a.work(), b.work()
    other = work.differs(wa, wb)  # different work: per step first, the durations a secondary fact
    regression = judge(a.sections(), b.sections(), labels=("A", "B"),  # A is the base; run.py applies a threshold
                       different_work=work.different_work(wa, wb))
    if other:
        assert wa is not None and wb is not None
        sentence, speed_word = _work_sentences(wa, wb, regression, da, db)
        sentences.append(sentence)
        na, nb = work.amounts(wa, wb)
        data.update(work={"a": wa.to_data(), "b": wb.to_data(), "steps_ratio": wb.steps / wa.steps,
                          "unit": "samples" if work.in_samples(wa, wb) else "steps", "ratio": nb / na},
                    speed=speed_word, speed_from="per step")
        if da is not None and db is not None:
            rel = (db - da) / da * 100 if da else 0.0
            data.update(duration_a_s=da, duration_b_s=db, duration_delta_s=db - da, duration_delta_pct=rel)
    elif da is not None and db is not None:
        rel = (db - da) / da * 100 if da else 0.0
        speed = "about as fast as" if abs(rel) <= SAME_TIME_PCT else "faster than" if rel < 0 else "slower than"
        speed_word = speed.replace(" than", "").replace(" as", "")
        data.update(duration_a_s=da, duration_b_s=db, duration_delta_s=db - da, duration_delta_pct=rel, speed=speed_word)
        sentences.append(f"B ran {speed} A: {db} s against {da} s ({signed(rel, 1)} %).")
    if (da is None or db is None) and not other:
        lacking = " and ".join(f"{s.label} has no job start and end times" for s, d in ((a, da), (b, db)) if d is None)
        steps = _steps_sentence(regression)
        if steps:  # trace-only runs: the profiled steps give the verdict
            speed_word = steps[1]
            data.update(speed=speed_word, speed_from="profiled steps")
            sentences.append(f"{steps[0]} The job durations cannot be compared: {lacking}.")
        else:
            sentences.append(f"The durations cannot be compared: {lacking}.")
    sample = per_sample(fit, regression)
    if sample is not None:
        sentences.append(sample[0])
        data["per_sample"] = sample[1]
    ta, tb = a.traces(), b.traces()
    rate = traces.throughput(ta, tb, da, db)
    if other:  # the durations are of different work: the job's rate is steps per second, not 1 / duration
        assert wa is not None and wb is not None
        rate = {**rate, "job_same_work_change_pct": None, **_job_rates(wa, wb, da, db)}
        cover = " and ".join(f"{100 * t.coverage:.1f} % of {s.label}" for s, t in ((a, ta), (b, tb))
                             if t and t.coverage is not None)
        if cover and regression.basis in STEP_BASES and not regression.unjudged:
            sentences.append(f"The step times are the profiled steps', which cover {cover}.")
            data["profiled_coverage"] = {"a": ta.coverage if ta else None, "b": tb.coverage if tb else None}
    data["throughput"] = rate
    if rate["job_same_work_change_pct"] is not None and (ta or tb):
        cover = " and ".join(f"{100 * t.coverage:.1f} % of {s.label}" for s, t in ((a, ta), (b, tb))
                             if t and t.coverage is not None)
        profiled = rate["profiled_change_pct"]
        without = " and ".join(s.label for s, t in ((a, ta), (b, tb)) if not t)
        in_them = (f": in them B runs {signed(profiled, 1)} % steps per second, a sample, not the job's figure"
                   if profiled is not None else f" ({without} has no profiled steps to compare them with)"
                   if without else "")
        units = ("steps per second; samples per second follow the time per sample above" if sample is not None
                 else "steps and samples per second")  # different batch sizes: a step is not the same work
        sentences.append(
            f"For the same work, that is {signed(rate['job_same_work_change_pct'], 1)} % throughput ({units})."
            + (f" The profiled steps cover only {cover}{in_them}." if cover else ""))
        data["profiled_coverage"] = {"a": ta.coverage if ta else None, "b": tb.coverage if tb else None}
    overall = overall_of(a), overall_of(b)
    util = {}
    own = {s.label: JobCpu.of_sections(s.sections()) for s in (a, b)}
    for metric in ("GPU", "CPU"):
        if not any(metric in o for o in overall):
            continue
        pa, pb = (number(o[metric].p95) if metric in o else None for o in overall)
        if metric == "CPU" and (own["A"] or own["B"]):  # a shared host: the job's own CPU, as generate judges it
            pa, pb = (mine.p95 if (mine := own[s.label]) else p for s, p in ((a, pa), (b, pb)))
            sentences.append("CPU: " + " and ".join(f"{label}'s host was shared, so its figure is the recorded "
                                                      "command's own CPU" for label in ("A", "B") if own[label]) + ".")
        if pa is None or pb is None:
            missing = "A" if pa is None else "B"
            sentences.append(f"{metric} utilization cannot be compared: {missing} has no {metric} data.")
            continue
        d = pb - pa
        word = "about the same" if abs(d) < SAME_UTIL_POINTS else "better" if d > 0 else "worse"
        util[metric] = {"a_p95": pa, "b_p95": pb, "delta": d, "utilization": word}
        if metric == "CPU" and (own["A"] or own["B"]):
            util[metric]["recorded_command"] = {"a": bool(own["A"]), "b": bool(own["B"])}
        how = (f"stayed about the same ({pa:.0f} % → {pb:.0f} %)" if word == "about the same" else
               f"{'rose' if d > 0 else 'fell'} from {pa:.0f} % to {pb:.0f} % ({word} use of the {metric}s)")
        sentences.append(f"The 95th percentile of {metric} utilization {how}.")
    data["utilization_p95"] = util
    if saving["saving"] is not None:  # cost.compare_costs' keys
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
    if rd["rows"]:  # rules.build's keys
        sentences.append(f"Rules: {len(rd['fixed'])} fixed, {len(rd['new'])} new, "
                         f"{len(rd['still_firing'])} still firing.")
    good = (saving["saving"] or 0) > 0 or any(u["utilization"] == "better" for u in util.values())
    bad = speed_word == "slower" or any(u["utilization"] == "worse" for u in util.values())
    section.add(Text(" ".join(sentences), tone="ok" if good and not bad else "finding" if bad else "plain"))
    data["text"] = " ".join(sentences)
    data["regression"] = regression.to_data()
    section.add(Text(regression.summary(), tone="finding" if regression.verdict in ("slower beyond noise", "cannot judge") else "plain"))
    cause_blocks, data["causes"] = compare_causes(a, b, (wa, wb) if other else None)
    section.add(*cause_blocks)
    section.data = data
    return section


def _work_sentences(wa: work.Work, wb: work.Work, regression, da, db) -> tuple[str, str | None]:
    """(sentences, speed) when the runs did different work: that first; then per step, the job's time per step
    (its duration ÷ its steps: what the duration verdict judges for the same work; speed from it as from the
    durations) and the regression check's step times with their interval (the speed from these when a job
    duration is missing); then the job durations as a secondary fact."""
    na, nb = work.amounts(wa, wb)
    unit = "sample" if work.in_samples(wa, wb) else "step"  # samples where both batch sizes are known
    times = nb / na
    more = times > 1
    head = (f"B ran {times:.1f}x the {unit}s of A" if times >= 1.5 else f"B ran {1 / times:.1f}x fewer {unit}s than A"
            if times <= 1 / 1.5 else f"B ran {abs(times - 1) * 100:.0f} % {'more' if more else 'fewer'} {unit}s than A")
    sources = f"both {wa.how()}" if wa.how() == wb.how() else f"B: {wb.how()}; A: {wa.how()}"
    if unit == "sample":
        sources = f"{wb.steps:.0f} steps of {wb.batch} against {wa.steps:.0f} of {wa.batch}; {sources}"
    head += f": {nb:.0f} against {na:.0f} ({sources}), so their durations are different work."
    speed = None
    steps = None  # the step times' sentence and speed
    if not regression.unjudged and regression.basis in STEP_BASES and regression.ratio is not None:
        change = (regression.ratio - 1) * 100
        beyond = regression.low is not None and (regression.low > 1 or regression.high < 1)
        interval = ("" if regression.low is None else f", 95 % interval {signed((regression.low - 1) * 100, 1)} to "
                    f"{signed((regression.high - 1) * 100, 1)} %" + ("" if beyond else ", within the runs' noise"))
        steps = (f"{regression.basis} {regression.base_value_s * 1000:.1f} ms → "
                 f"{regression.new_value_s * 1000:.1f} ms ({signed(change, 1)} %{interval})",
                 "about as fast" if abs(change) <= SAME_TIME_PCT or not beyond else "slower" if change > 0 else "faster")
    if wa.batch and wb.batch and wa.batch != wb.batch:
        steps = None  # steps of different batches: the time per sample follows (``per_sample``)
    if da and db:
        pa, pb = da / na, db / nb
        rel = (pb - pa) / pa * 100
        speed = "about as fast" if abs(rel) <= SAME_TIME_PCT else "faster" if rel < 0 else "slower"
        head += (f" Per {unit} B ran {_how(speed)} A: {_per_step(pb)} against {_per_step(pa)} of job time per {unit} "
                 f"({signed(rel, 1)} %, start-up included)" + (f"; its {steps[0]}." if steps else "."))
    elif steps:
        speed = steps[1]
        head += f" Per step B ran {_how(speed)} A: {steps[0]}."
    else:
        why = regression.unjudged or regression.note or "no step times on both sides"
        head += f" Per {unit} they cannot be compared: {why.rstrip('.')}."
    if da is not None and db is not None:
        rel = (db - da) / da * 100 if da else 0.0
        took = "as long" if db == da else "longer" if db > da else "less time"
        steps_word = "more" if more else "fewer"
        # "because" only where the work explains the duration: not where the speed per step does
        explained = db != da and (db > da) == more and speed in (None, "about as fast", "faster" if more else "slower")
        head += (f" Its whole run took {took} because it ran {steps_word} {unit}s" if explained else
                 f" Its whole run took {took} although it ran {steps_word} {unit}s" if db != da and (db > da) != more
                 else f" Its whole run, of {steps_word} {unit}s, took {took}")
        head += f": {db} s against {da} s ({signed(rel, 1)} %)."
    return head, speed


def _how(speed: str) -> str:
    return {"about as fast": "about as fast as", "slower": "slower than", "faster": "faster than"}[speed]


def _per_step(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _job_rates(wa: work.Work, wb: work.Work, da, db) -> dict:
    """Steps per second over each whole job (its steps ÷ its job duration) and their change (%)."""
    ra = wa.steps / da if da else None
    rb = wb.steps / db if db else None
    return {"job_steps_per_s_a": ra, "job_steps_per_s_b": rb,
            "job_steps_per_s_change_pct": (rb / ra - 1) * 100 if ra and rb else None}


def _steps_sentence(regression) -> tuple[str, str] | None:
    """(sentence, speed) from the step comparison when the job durations are missing (trace-only runs), with
    its interval and the small-sample caveat; None when the steps could not be judged either."""
    if regression.unjudged or regression.basis not in STEP_BASES or regression.ratio is None:
        return None
    change = (regression.ratio - 1) * 100
    beyond = regression.low is not None and (regression.low > 1 or regression.high < 1)
    speed = "about as fast" if abs(change) <= SAME_TIME_PCT or not beyond else "slower" if change > 0 else "faster"
    how = {"about as fast": "about as fast as", "slower": "slower than", "faster": "faster than"}[speed]
    noise = "" if beyond else ", within the runs' noise"
    small = (" A small sample: the profiled steps may not be the job's."
             if min(regression.base_steps or 0, regression.new_steps or 0) < MIN_STEPS else "")
    return (f"In the profiled steps B ran {how} A: {regression.basis} {regression.base_value_s * 1000:.1f} ms → "
            f"{regression.new_value_s * 1000:.1f} ms ({signed(change, 1)} %, 95 % interval "
            f"{signed((regression.low - 1) * 100, 1)} to {signed((regression.high - 1) * 100, 1)} %{noise}).{small}",
            speed)


def per_sample(fit, regression) -> tuple[str, dict] | None:
    """(sentence, data) of the time per sample (a step's time ÷ its batch size) where both batch sizes are known
    and differ: the fair comparison of such runs, whose step times do different work. From the regression check's
    step times (median, or mean for a small sample) and its interval, scaled by the batch sizes; None otherwise."""
    if not (fit.batch_a and fit.batch_b) or fit.batch_a == fit.batch_b or regression.ratio is None \
            or regression.basis not in STEP_BASES:
        return None
    scale = fit.batch_a / fit.batch_b
    ratio, a_ms, b_ms = regression.ratio * scale, regression.base_value_s * 1000 / fit.batch_a, \
        regression.new_value_s * 1000 / fit.batch_b
    data = {"basis": regression.basis, "a_ms": a_ms, "b_ms": b_ms, "ratio": ratio,
            "low": regression.low * scale if regression.low is not None else None,
            "high": regression.high * scale if regression.high is not None else None}
    interval = ("" if data["low"] is None else
                f", 95 % interval {signed((data['low'] - 1) * 100, 1)} to {signed((data['high'] - 1) * 100, 1)} %")
    return (f"Per sample (batch {fit.batch_a} vs {fit.batch_b}, the fair comparison of these runs): "
            f"{a_ms:.3g} ms → {b_ms:.3g} ms of {regression.basis} ({signed((ratio - 1) * 100, 1)} %{interval}).",
            data)
