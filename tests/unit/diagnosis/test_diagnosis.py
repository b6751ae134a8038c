"""The diagnosis: causes from evidence, ordering by impact, "not evaluated", and the At a glance block."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportgen.diagnosis import diagnose
from reportgen.diagnosis.evaluation import evaluate_rule
from reportgen.report.build import build_report
from reportgen.rule_outputs import RuleOutput, RuleOutputs



def rule(name, triggered=0, violations=0, datapoints=2000, details=None, params=""):
    return RuleOutput(name, triggered, violations, details or {}, datapoints, params)


def outputs(*rules, timeline=None, kineto=None):
    made = RuleOutputs(folder=Path("."))
    made.rules = {r.name: r for r in rules}
    made.timeline, made.traces = timeline, kineto
    return made


@pytest.fixture(scope="module")
def sample_outputs(sample_rule_outputs):
    from reportgen.rule_outputs import load_rule_outputs

    return load_rule_outputs(sample_rule_outputs)


def test_sample_data_is_an_input_pipeline_problem(sample_outputs):
    diagnosis = diagnose(sample_outputs)
    assert diagnosis.status == "problems"
    top = diagnosis.findings[0]
    assert top.cause == "input-pipeline"
    assert top.metrics["num_workers"] == 1 and top.metrics["cores"] == 4
    # 2 GPU processes with 1 worker each on 4 cores: no more workers fit (cores ÷ processes − 1 = 1)
    assert "The cores are the limit: 4 cores per node leave 1 data-loading worker to each of 2 training processes" in top.fix and "pin_memory=True" in top.fix
    assert "use 8 vCPUs per node (2 more workers each)" in top.fix and top.metrics["worker_budget"] == 1
    # 1708 of 3120 snapshots had a GPU idle while a core was saturated; 1488 of them in the training loop (the
    # samples taken while the training processes waited for data); no step-time account here (rule outputs alone)
    assert top.share == pytest.approx(1488 / 3120) and "account_data_wait_share" not in top.metrics
    assert top.seconds == pytest.approx(top.share * diagnosis.evidence.duration_s)
    assert top.cost is None  # no instance, no price
    assert set(top.rules) >= {"Dataloader", "CPUBottleneck", "LowGPUUtilization"}
    assert "smaller instance" in top.note  # LowGPUUtilization's advice is reconciled, not repeated
    shares = [f.share for f in diagnosis.findings if f.risk is None and f.share >= 0.05]
    assert shares == sorted(shares, reverse=True)


def test_cost_is_the_share_of_the_run(sample_outputs):
    diagnosis = diagnose(sample_outputs, price_per_hour=3.6, instance_count=2)
    top = diagnosis.findings[0]
    assert top.cost == pytest.approx(top.seconds * 2 * 3.6 / 3600)
    assert diagnose(sample_outputs, job_cost=10.0).findings[0].cost == pytest.approx(10.0 * top.share)


def test_report_json_carries_the_diagnosis(sample_outputs):
    from reportgen.report.json_output import report_data

    data = report_data(build_report(sample_outputs, job_name="s"), "2026-01-01 00:00 UTC")
    diag = json.loads(json.dumps(data, allow_nan=False))["diagnosis"]
    assert diag["status"] == "problems"
    assert diag["findings"][0]["cause"] == "input-pipeline"
    assert set(diag["findings"][0]["impact"]) >= {"seconds", "share", "cost"}
    assert diag["findings"][0]["sections"][0] == "dataloading-analysis"


@pytest.mark.parametrize("args, state", [
    (("LowGPUUtilization", 0, 0, "patience:1000\nwindow:500"), "not_evaluated"),
    (("LowGPUUtilization", 0, 1000, "patience:1000\nwindow:500"), "not_evaluated"),
    (("LowGPUUtilization", 0, 1001, "patience:1000\nwindow:500"), "passed"),
    (("LowGPUUtilization", 3, 16, "patience:1000"), "fired"),
    (("CPUBottleneck", 0, 16, "threshold:50\npatience:1000"), "not_evaluated"),
    (("MaxInitializationTime", 0, 0, "threshold:20"), "not_evaluated"),
    (("MaxInitializationTime", 0, 12, "threshold:20"), "passed"),
])
def test_rule_evaluation_states(args, state):
    name, triggered, datapoints, params = args
    pairs = [tuple(line.split(":")) for line in params.splitlines()]
    assert evaluate_rule(name, triggered, datapoints, pairs)[0] == state


def test_gpu_rules_are_not_evaluated_without_gpus():
    state, reason = evaluate_rule("CPUBottleneck", 0, 5000, [("patience", "1000")], {}, has_gpu=False)
    assert state == "not_evaluated" and "GPU" in reason
    one_gpu = {"algo-1": {"workloads": {"gpu0": [1, 2]}}}
    assert evaluate_rule("LoadBalancing", 0, 5000, [("patience", "1000")], one_gpu)[0] == "not_evaluated"


def test_nothing_evaluated_is_insufficient_data_not_healthy():
    made = outputs(rule("LowGPUUtilization", datapoints=16, params="patience:1000"),
                   rule("CPUBottleneck", datapoints=16, params="patience:1000"),
                   rule("Dataloader", datapoints=0), rule("StepOutlier", datapoints=0))
    diagnosis = diagnose(made)
    assert diagnosis.status == "insufficient-data"
    assert diagnosis.findings == []
    assert set(diagnosis.not_evaluated) == {"LowGPUUtilization", "CPUBottleneck", "Dataloader", "StepOutlier"}


def kineto_outputs(name):
    from reportgen.trace_analysis.outputs import analyze_job
    from tests.support.paths import RAW, need

    folder = need(RAW / name)
    files = sorted(p for p in folder.rglob("*") if ".pt.trace.json" in p.name)
    doc, _ = analyze_job(files)
    return outputs(kineto=doc)


@pytest.mark.fixtures
def test_torch_input_bound_recording_is_input_pipeline():
    diagnosis = diagnose(kineto_outputs("torch-cpu-record-inputbound"))
    top = diagnosis.findings[0]
    assert diagnosis.status == "problems" and top.cause == "input-pipeline"
    assert top.metrics["dataloader_step_share"] == pytest.approx(0.817, abs=0.005)  # 82 % of step time
    assert any("82 % of the profiled step time in the DataLoader" in e for e in top.evidence)
    assert "num_workers from 0 to" in top.fix and top.title == "Training waits for its input pipeline"


@pytest.mark.fixtures
def test_torch_two_workers_recording_is_not_called_healthy_on_six_profiled_steps():
    diagnosis = diagnose(kineto_outputs("torch-cpu-record-workers2"))
    assert diagnosis.findings == []  # DataLoader 4-9 % of the step: the input pipeline keeps up
    assert diagnosis.status == "insufficient-data"  # step times could not be judged from 6 steps
    # memory could, from the allocator's events of the trace (profile_memory=True): flat, no leak (issue 48)
    answers = {a.question: a for a in diagnosis.answers}
    assert answers["input-pipeline"].judged is True and answers["gpu-use"].judged is None
    assert answers["step-times"].how == "6 profiled steps per rank; slow or periodic steps need at least 20 (profile more active steps)"
    assert answers["memory"].judged is True and answers["memory"].how.endswith("(cpu)")
    assert "Judged: the input pipeline, memory, where each step's time goes. Not judged: step times" in \
        diagnosis.coverage_text()


def _loader_straggler_set(tmp_path):
    """Three DDP ranks; rank 2 loads its data 40 ms slower per step, the others wait for it in the all-reduce."""
    from reportgen.trace_analysis import analyze_job, find_traces
    from testdata.kineto_synthetic import KinetoSet, write_set

    write_set(KinetoSet(ranks=3, mb=1.0, seed=5, cycles=2, straggler=2, straggler_ms=40.0, layers=2), tmp_path)
    doc, _ = analyze_job(find_traces(tmp_path))
    return doc


def test_one_rank_loading_slowly_is_a_straggler_not_also_the_jobs_input_pipeline(tmp_path):
    """Its slow DataLoader is why the others wait: one cause, counted once (it was also 'input pipeline', first)."""
    doc = _loader_straggler_set(tmp_path)
    shares = {label: rank["dataloader"]["step_share"] for label, rank in doc["ranks"].items()}
    assert shares["2"] > 0.6 and shares["0"] < 0.1 and shares["1"] < 0.1
    diagnosis = diagnose(outputs(kineto=doc))
    assert [f.cause for f in diagnosis.findings] == ["straggler"]
    straggler = diagnosis.findings[0]
    assert straggler.metrics["who"] == "rank 2" and 0.5 < straggler.share < 0.7
    assert any("data loading" in e for e in straggler.evidence)


def test_ranks_that_all_wait_for_data_are_still_the_input_pipeline(tmp_path):
    doc = _loader_straggler_set(tmp_path)
    for label in ("0", "1"):  # the ranks the straggler holds back spend most of their steps loading too
        doc["ranks"][label]["dataloader"]["step_share"] = 0.55
    diagnosis = diagnose(outputs(kineto=doc))
    loader = next(f for f in diagnosis.findings if f.cause == "input-pipeline")
    assert loader.metrics["dataloader_step_share"] == pytest.approx(0.55)
    assert any("55 % of the profiled step time in the DataLoader (rank 0)" in e for e in loader.evidence)


@pytest.mark.fixtures
def test_torch_ddp_recording_names_rank_0_from_collective_wait():
    diagnosis = diagnose(kineto_outputs("torch-cpu-record-ddp2"))
    straggler = next(f for f in diagnosis.findings if f.cause == "straggler")
    assert straggler.metrics["who"] == "rank 0"
    assert any("waits only 249 ms" in e for e in straggler.evidence)
    # the other rank's extra *exposed* wait (27.5 % of its step against rank 0's 6.3 %): gloo's all-reduce
    # overlapping backward on the main thread (41 % - 11 % in flight) costs nothing
    assert straggler.share == pytest.approx(0.275 - 0.063, abs=0.01)


def test_outlier_steps_listed_and_marked_on_the_timeline(sample_outputs):
    report = build_report(sample_outputs, job_name="s")
    steps = report.section("step-duration-analysis")
    table = next(b for b in steps.tables() if b.id == "outlier-steps")
    assert table.caption == "The 20 slowest of 30 outlier steps"  # 15 planted per node (sample_data/README.md)
    assert table.rows[0][:2] == ["algo-2-27", "285"] and table.rows[0][3] == pytest.approx(4.88215)
    assert table.rows[0][5] == "10.8×"  # against the node's median step of 0.45 s
    durations = [row[3] for row in table.rows]
    assert durations == sorted(durations, reverse=True)
    planted = {"algo-1-27": {"40", "56", "69", "98", "214", "219", "228", "251", "304", "348", "360", "382", "397",
                             "399", "435"},
               "algo-2-27": {"70", "82", "169", "208", "250", "285", "291", "298", "342", "378", "380", "450", "453",
                             "475", "493"}}
    for node, wanted in planted.items():
        assert {o["step"] for o in steps.data["nodes"][node]["outliers"]} == wanted
    phases = next(b for b in report.section("utilization-over-time").blocks if getattr(b, "id", "") == "timeline-phases")
    marks = next(t for t in phases.figure["data"] if t.get("name") == "outlier steps")
    assert len(marks["x"]) == 30 and set(marks["y"]) == {"algo-1-27 train", "algo-2-27 train"}
    assert marks["text"][0] == "step 285: 4.88 s, 10.8× the median"


def test_at_a_glance_identity_names_arn_instance_and_cost(sample_outputs):
    from reportgen.render.blocks import render_glance

    cost = {"instance_type": "ml.g4dn.12xlarge", "instance_count": 2, "region": "us-east-1"}
    report = build_report(sample_outputs, job_name="s", cost=cost)
    report.source = "arn:aws:sagemaker:us-east-1:123456789012:processing-job/x<y>"
    html = render_glance(report)
    assert "<dt>ARN</dt><dd>arn:aws:sagemaker:us-east-1:123456789012:processing-job/x&lt;y&gt;</dd>" in html
    assert "<dt>Instance</dt><dd>ml.g4dn.12xlarge × 2</dd>" in html
    run = report.section("cost").data
    assert f"<dt>Cost</dt><dd>${run['cost_rounded']:,.2f}</dd>" in html
    top = report.diagnosis.findings[0]
    assert top.cost == pytest.approx(top.share * run["cost"])  # the finding's share of what the run cost
    assert f"about ${top.cost:,.2f}" in html


def test_a_trace_without_outlier_steps_does_not_claim_their_durations_are_missing():
    # as the trace analysis writes StepOutlier for hta-resnet-v100-1gpu: 5 steps, no outlier among them
    none = outputs(rule("StepOutlier", details={"step_details": {"rank-0": {
        "number_of_outliers": 0, "steps": 5, "step_stats": {"p50": 0.08}, "outliers": []}}}))
    assert not any("outlier steps" in item for item in diagnose(none).not_judged)
    counted = outputs(rule("StepOutlier", details={"step_details": {"algo-1": {
        "number_of_outliers": 3, "step_stats": {"p50": 0.4}}}}))
    assert any("only counts" in item for item in diagnose(counted).not_judged)


@pytest.mark.fixtures
def test_traces_alone_an_impact_is_its_share_of_the_profiled_steps_time_not_of_the_traces_span():
    """hta-resnet-v100-1gpu: 5 profiled steps (394 ms) in a 590 ms trace; fp32 GEMMs that tensor cores would
    halve give back 29.8 ms a step: 5 x 29.8 ms of the profiled steps, not 38 % of the whole trace."""
    made = kineto_outputs("hta-resnet-v100-1gpu")
    rank = made.traces["ranks"]["0"]
    steps_s = sum(s["dur_ms"] for s in rank["steps"]) / 1000
    assert len(rank["steps"]) == 5 and steps_s < rank["span_ms"] / 1000 * 0.7
    diagnosis = diagnose(made)
    top = diagnosis.findings[0]
    assert top.cause == "no-mixed-precision" and top.base == "profiled steps"
    assert top.seconds == pytest.approx(top.share * steps_s)
    assert top.seconds == pytest.approx(5 * top.metrics["per_step_ms"] / 1000, rel=1e-6)
