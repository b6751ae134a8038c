"""SageMaker's framework events as the one trace model: the step-time account of each training process.

A synthetic profile (testdata/synthetic.py) plants the data wait (the DataLoader's GetNext before each step: ``gap_ms``)
and the forward / backward passes (37 % and 57 % of each step); the account must find exactly those, read
independently from the trace files the generator wrote, with every step's slices adding up to the step."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

from reportgen.diagnosis import diagnose
from reportgen.engine import analyze, load_data
from reportgen.engine.framework_trace import node_traces
from reportgen.report.sections import framework
from reportgen.report.model import leaves
from reportgen.rule_outputs import load_rule_outputs
from reportgen.trace_analysis.account import SLICES, step_account
from reportgen.trace_analysis.framework_account import FRAMEWORK_ACCOUNT_JSON, write_framework_account
from testdata.synthetic import Scenario, generate
from tests.support.paths import SAMPLE_DATA

GAP_MS = 100.0  # planted: the DataLoader's wait before each 300 ms step (a quarter of the step with the wait)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("planted")
    sc = Scenario(init_s=5, final_s=2, step_ms=300, gap_ms=GAP_MS, dataloader_workers=2, eval_every=20, eval_steps=3)
    generate(root / "raw", nodes=2, cores=4, gpus=1, duration_s=120, scenario=sc)
    return root


def _file_events(raw: Path) -> dict[str, list[tuple]]:
    """node -> (phase, name, start, dur) of every complete event, read from the files without reportgen."""
    out = defaultdict(list)
    for path in sorted((raw / "framework").rglob("*_pythontimeline.json")):
        node = path.name.split("_")[1]  # 27-algo-1
        node = f"{node.split('-', 1)[1]}-{node.split('-', 1)[0]}"  # smdebug's per-process id: algo-1-27
        events = json.loads(path.read_text())
        base = events[0]["args"]["start_time_since_epoch_in_micros"]
        phases = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name" and "name" in e["args"]}
        for e in events:
            if e.get("ph") == "X":
                out[node].append((phases[e["pid"]], e["name"], base + e["ts"], e["dur"]))
    return out


def test_slices_add_up_and_equal_the_planted_wait_and_passes(planted):
    data, _ = load_data(planted / "raw")
    try:
        traces = node_traces(data.framework.node_events(), data.framework.rows)
    finally:
        data.framework.close()
    files = _file_events(planted / "raw")
    assert [t.node for t in traces] == ["algo-1-27", "algo-2-27"]
    for trace in traces:
        events = files[trace.node]
        train = sorted((s, d) for p, _, s, d in events if p == "Step:ModeKeys.TRAIN")
        fetch = sorted((s, d) for p, _, s, d in events if p in ("DataLoaderIter", "DataLoaderIterInitialize"))
        passes = sorted((s, d) for p, _, s, d in events if p in ("Forward", "Backward(post-forward)"))
        assert len(trace.steps) == len(train) > 100
        account = step_account(trace.columns, trace.steps)
        per = account["per_step_ms"]
        for i, (start, dur) in enumerate(train):
            step = trace.steps[i]
            # each step begins at the fetch of its batch: the GetNext call right before it (and at an epoch's start
            # the iterator's creation before that)
            wait = [(s, d) for s, d in fetch if step["start_us"] <= s and s + d <= start]
            assert wait and wait[0][0] == step["start_us"] and step["start_us"] + step["dur_us"] == start + dur
            assert sum(per[name][i] for name in SLICES) == pytest.approx(step["dur_us"] / 1000.0, abs=1e-6)
            # waiting for data: the DataLoader's calls inside the step (the generator starts an evaluation's
            # iterator in the last 1.5 ms of the training step before it)
            inside = [d for s, d in fetch if step["start_us"] <= s and s + d <= start + dur]
            assert per["data_wait"][i] == pytest.approx(sum(inside) / 1000.0, abs=1e-6)
            compute = sum(d for s, d in passes if start <= s < start + dur)
            assert per["compute"][i] == pytest.approx(compute / 1000.0, abs=1e-6)
        # the planted wait: GAP_MS before each step, less the 0.3 ms between the call's end and the step
        assert statistics.median(per["data_wait"]) == pytest.approx(GAP_MS - 0.3, rel=0.05)
        # DataLoader workers are other processes (left out); evaluation steps lie between the training steps
        assert trace.workers_left_out == sum(1 for p, *_ in events if p == "DataLoaderWorker")
        evals = sum(d for p, _, _, d in events if p == "Step:ModeKeys.EVAL") / 1000.0
        assert 0 < evals < account["window"]["between_steps_ms"]


def test_the_planted_wait_is_a_finding_and_the_clean_run_healthy(planted, tmp_path):
    """25 % of each step waiting for data, below the input pipeline's utilization signs: the account finds it."""
    result = analyze(planted / "raw", tmp_path / "a")
    path = write_framework_account(result.node_traces, tmp_path / "a")
    assert path == tmp_path / "a" / FRAMEWORK_ACCOUNT_JSON
    diagnosis = diagnose(load_rule_outputs(result.report_dir))
    assert diagnosis.status == "problems"
    (finding,) = [f for f in diagnosis.findings if f.cause == "step-waste"]
    assert finding.metrics["slices"]["data_wait"] == pytest.approx((GAP_MS - 0.3) / (GAP_MS + 300), rel=0.05)
    assert "waiting for data" in finding.title and "DataLoaderIter::GetNext" in finding.evidence[0]
    assert finding.sections == ["framework-metrics-summary"]
    assert any(a.question == "step-account" and a.judged for a in diagnosis.answers)
    # the page: one row per slice and node, the slices' shares adding up to the step; report.json's summary
    section = framework.build(load_rule_outputs(result.report_dir))
    (table,) = [t for t in section.tables() if t.id == "framework-step-account"]
    for node in ("algo-1-27", "algo-2-27"):
        rows = [r for r in table.rows if r[0] == node]
        assert rows[-1][1] == "Step (all slices)" and sum(r[3] for r in rows[:-1]) == pytest.approx(100.0)
        assert [r[1] for r in rows[:-1]] == ["Compute", "Waiting for data", "Outside forward and backward (loss, "
                                             "optimizer, other Python)"]
        summary = section.data["step_account"]["nodes"][node]
        assert sum(summary["slices_ms"].values()) == pytest.approx(summary["step_ms"])
    workers = sum(t.workers_left_out for t in result.node_traces)
    assert workers > 0 and any(f"worker processes ({workers:,} events) are not in the account" in getattr(b, "text", "")
                               for b in leaves(section.blocks))  # the account's text is behind its summary line


def test_sample_data_accounts_each_training_process():
    """The bundled sample: two processes (algo-1-27, algo-2-27), every TRAIN step accounted, the slices adding up;
    each step first waits for its batch (the starved input pipeline sample_data plants: over half of the step) and
    computes in its forward and backward passes most of the rest."""
    data, _ = load_data(SAMPLE_DATA)
    try:
        traces = node_traces(data.framework.node_events(), data.framework.rows)
        train = data.framework.rows[data.framework.rows["name"].astype(str) == "Step:ModeKeys.TRAIN"]
        counts = train.groupby(train["node_id"].astype(str)).size().to_dict()
    finally:
        data.framework.close()
    assert {t.node: len(t.steps) for t in traces} == counts == {"algo-1-27": 554, "algo-2-27": 553}
    for trace in traces:
        account = step_account(trace.columns, trace.steps)
        totals = [sum(v) for v in zip(*account["per_step_ms"].values())]
        assert totals == pytest.approx([s["dur_us"] / 1000.0 for s in trace.steps], abs=1e-6)
        slices = account["slices_ms"]
        assert account["perspective"] == "host" and slices["data_wait"] > 0.5 * account["step_ms"]
        assert slices["data_wait"] + slices["compute"] > 0.95 * account["step_ms"]


# -------------------------------------------------------------- slow steps, explained by the process's account

def _diagnosis(raw: Path, out: Path):
    result = analyze(raw, out)
    write_framework_account(result.node_traces, out)
    return diagnose(load_rule_outputs(result.report_dir))


def _slow_steps_finding(raw: Path, out: Path):
    (finding,) = [f for f in _diagnosis(raw, out).findings if f.cause == "step-outliers"]
    return finding


@pytest.fixture(scope="module")
def sample_diagnosis(tmp_path_factory):
    return _diagnosis(SAMPLE_DATA, tmp_path_factory.mktemp("sample") / "a")


def _planted_outliers(tmp_path, wait: bool):
    """8 TRAIN steps 6x longer on one process: the extra time a DataLoader started again inside the step
    (``wait``) or longer forward and backward passes."""
    sc = Scenario(init_s=5, final_s=2, step_ms=300, step_outliers=8, step_outlier_factor=6.0,
                  step_outlier_wait=wait, dataloader_workers=2)
    stats = generate(tmp_path / "raw", nodes=1, cores=4, gpus=1, duration_s=120, scenario=sc)
    events = _file_events(tmp_path / "raw")["algo-1-27"]
    planted = set(stats.planted["nodes"]["algo-1"]["step_outliers"])
    train = sorted((s, d) for p, _, s, d in events if p == "Step:ModeKeys.TRAIN")
    outliers = [(s, d) for k, (s, d) in enumerate(train) if str(k) in planted]
    assert len(outliers) == 8
    return events, train, outliers, _slow_steps_finding(tmp_path / "raw", tmp_path / "a")


def test_slow_steps_planted_as_a_loader_restart_get_persistent_workers(tmp_path):
    """The slow steps' extra time is the DataLoader's iterator created again in them: the finding says they wait
    for data, by exactly the planted iterator starts, and the fix is persistent_workers, not the generic list."""
    events, _, outliers, finding = _planted_outliers(tmp_path, wait=True)
    starts = [d for p, _, s, d in events if p == "DataLoaderIterInitialize"
              and any(a <= s < a + b for a, b in outliers)]
    assert len(starts) == 8
    assert finding.metrics["worker"] == "algo-1-27" and finding.metrics["outlier_steps"] == 8
    assert finding.metrics["slow_in"] == "data_wait"
    # the wait over the median step's: the planted starts (the GetNext before each step varies by ~2 ms)
    assert finding.metrics["excess_ms_by_slice"]["data_wait"] == pytest.approx(sum(starts) / 1000.0, rel=0.01)
    assert finding.metrics["excess_ms_by_slice"]["compute"] < 0.01 * sum(starts) / 1000.0
    assert "the slow steps are slow in waiting for data" in finding.evidence[-1]
    assert "persistent_workers=True" in finding.fix and "garbage collection" not in finding.fix


def test_slow_steps_planted_as_longer_passes_get_bucketing(tmp_path):
    """The slow steps' forward and backward passes are 6x longer, one pass each as usual: larger inputs, bucket."""
    events, train, outliers, finding = _planted_outliers(tmp_path, wait=False)
    passes = sorted((s, d) for p, _, s, d in events if p in ("Forward", "Backward(post-forward)"))

    def compute_ms(start, dur):
        return sum(d for s, d in passes if start <= s < start + dur) / 1000.0

    median = statistics.median(compute_ms(s, d) for s, d in train)
    assert finding.metrics["slow_in"] == "compute"
    assert finding.metrics["excess_ms_by_slice"]["compute"] == pytest.approx(
        sum(compute_ms(s, d) - median for s, d in outliers), abs=1e-3)
    assert "the slow steps are slow in the forward and backward passes" in finding.evidence[-1]
    assert finding.fix.startswith("The slow steps run as many forward and backward passes as the others")
    assert "Bucket samples by size" in finding.fix and "garbage collection" not in finding.fix


def test_sample_data_input_pipeline_is_its_processes_wait(sample_diagnosis):
    """sample_data's one story (issue 46): the input-pipeline finding (before, 51 % of the job from the utilization
    samples while the processes' account waited 3 % of each step) is within what the account shows the processes
    waiting for data (54 % of each step), and the samples agree with it within 2 points of the job: no evidence set
    aside."""
    finding = sample_diagnosis.findings[0]
    ev = sample_diagnosis.evidence
    waited = max(a.share("data_wait") for a in ev.framework.nodes.values())
    assert finding.cause == "input-pipeline" and finding.metrics["account_data_wait_share"] == pytest.approx(waited)
    assert waited > 0.5 and finding.share <= waited * ev.loop_s / ev.duration_s + 1e-9
    assert abs(ev.cpu_bn_share - waited * ev.loop_s / ev.duration_s) < 0.02 and not sample_diagnosis.quality_notes
    assert finding.share > 0.45 and finding.counts


def test_sample_data_slow_steps_are_slow_in_their_passes(tmp_path):
    """sample_data: the slow steps are found on the account's own steps (the wait for each batch before the step
    included), 15 on each process; algo-2-27's cost most. Their extra time is told from the account: 93 % in the
    forward and backward passes (3814 ms per step), under 1 % waiting for their batch (the wait varies from step to
    step in a starved pipeline: the median step waits too), the rest outside the passes."""
    finding = _slow_steps_finding(SAMPLE_DATA, tmp_path / "a")
    assert finding.metrics["worker"] == "algo-2-27" and finding.metrics["outlier_steps"] == 15
    excess = finding.metrics["excess_ms_by_slice"]
    assert finding.metrics["slow_in"] == "compute" and excess["data_wait"] < 0.01 * sum(excess.values())
    assert excess["compute"] / sum(excess.values()) == pytest.approx(0.93, abs=0.01)
    assert excess["compute"] / 15 == pytest.approx(3814, abs=1)


# ------------------------------------------- stragglers and waits before the step, from the processes' accounts

def _diagnosed(raw: Path, out: Path):
    result = analyze(raw, out)
    write_framework_account(result.node_traces, out)
    return diagnose(load_rule_outputs(result.report_dir))


def _steps_with_their_wait(events) -> list[tuple[int, int]]:
    """(start, wall µs) of each TRAIN step with the DataLoader calls between the previous step (of any mode) and it,
    read from the files: what the account's step is."""
    steps = sorted((s, d, p) for p, _, s, d in events if p.startswith("Step:"))
    fetch = sorted(s for p, _, s, d in events if p in ("DataLoaderIter", "DataLoaderIterInitialize"))
    out, prev_end = [], 0
    for start, dur, phase in steps:
        if phase == "Step:ModeKeys.TRAIN":
            first = min([s for s in fetch if prev_end <= s < start], default=start)
            out.append((start, start + dur - first))
        prev_end = start + dur
    return out


def _median_step_ms(events) -> float:
    return statistics.median(d for _, d in _steps_with_their_wait(events)) / 1000.0


def _planted_straggler(tmp_path, **knobs):
    sc = Scenario(init_s=5, final_s=2, dataloader_workers=2, **knobs)
    generate(tmp_path / "raw", nodes=2, cores=4, gpus=1, duration_s=120, scenario=sc)
    files = _file_events(tmp_path / "raw")
    diagnosis = _diagnosed(tmp_path / "raw", tmp_path / "a")
    findings = {f.cause: f for f in diagnosis.findings}
    fast, slow = _median_step_ms(files["algo-1-27"]), _median_step_ms(files["algo-2-27"])
    return findings, fast, slow, load_rule_outputs(tmp_path / "a" / "profiler-reports")


def test_a_process_that_waits_longer_for_its_batches_is_the_straggler_and_costs_the_whole_gap(tmp_path):
    """algo-2 waits 150 ms for each batch before its step, algo-1 12 ms; their TRAIN steps are alike (StepOutlier's
    medians within 10 %: the timeline alone finds no straggler). The account's steps hold the wait: algo-2 is the
    straggler, slower in waiting for data, which a fix removes: the whole gap is saved, of its step."""
    findings, fast, slow, outputs = _planted_straggler(tmp_path, step_ms=300, gap_ms=(12, 150))
    medians = [w["step_stats"]["p50"] for w in outputs.rules["StepOutlier"].details["step_details"].values()]
    assert max(medians) / min(medians) - 1 < 0.10  # the TRAIN steps alone: no straggler
    found = findings["straggler"]
    assert found.metrics["who"] == "algo-2-27" and found.metrics["compared"] == "processes"
    assert found.metrics["method"] == "step time" and found.metrics["slower_in"] == "data_wait"
    assert slow - fast == pytest.approx(138, abs=6)  # the planted 150 - 12 ms
    assert found.loop_share == pytest.approx(1 - fast / slow, abs=0.005)  # the whole gap
    assert "it is slower in waiting for data, which a fix removes rather than moves" in found.evidence[2]
    assert found.fix.startswith("Give algo-2 (pid 27) the same input pipeline as the others")
    assert "step-waste" not in findings  # the straggler's wait is its finding, counted once


def test_a_process_slower_in_its_passes_saves_half_the_gap(tmp_path):
    """algo-2's TRAIN steps take 420 ms against 300: slower in the forward and backward passes, which is work;
    evened out over the two processes each takes half of it: half the gap is saved."""
    findings, fast, slow, _ = _planted_straggler(tmp_path, step_ms=(300, 420))
    found = findings["straggler"]
    assert found.metrics["who"] == "algo-2-27" and found.metrics["slower_in"] == "compute"
    assert found.metrics["gap_share"] == pytest.approx(1 - fast / slow, abs=0.005)
    assert found.loop_share == pytest.approx((1 - fast / slow) / 2, abs=0.003)
    assert "evened out over the 2 processes, each takes 1/2 of it" in found.evidence[2]


def _median_passes_ms(events) -> float:
    """The median TRAIN step's time in its forward and backward passes, read from the files (they do not overlap)."""
    steps = sorted((s, d) for p, _, s, d in events if p == "Step:ModeKeys.TRAIN")
    passes = sorted((s, d) for p, _, s, d in events if p in ("Forward", "Backward(post-forward)"))
    per_step = [sum(d for s, d in passes if lo <= s < lo + dur) for lo, dur in steps]
    return statistics.median(per_step) / 1000.0


def test_in_lock_step_without_collectives_the_process_that_works_longer_is_the_straggler(tmp_path):
    """Both processes' TRAIN steps take 420 ms (lock step: DDP's all-reduce is not in smdebug's events), but algo-2
    waits the last 120 ms of each under no operator (slack_ms): its passes shrink to the rest. Neither the TRAIN steps
    (StepOutlier's medians) nor the steps with their wait tell a straggler; the accounts' work does: algo-1, slower in
    the passes by what the files hold, priced at half the gap (work, evened out over two)."""
    findings, fast, slow, outputs = _planted_straggler(tmp_path, step_ms=420, slack_ms=(0, 120))
    medians = [w["step_stats"]["p50"] for w in outputs.rules["StepOutlier"].details["step_details"].values()]
    assert max(medians) / min(medians) - 1 < 0.10 and abs(slow / fast - 1) < 0.10  # equal steps either way
    found = findings["straggler"]
    assert found.metrics["who"] == "algo-1-27" and found.metrics["method"] == "busy time"
    assert found.metrics["slower_in"] == "compute"
    files = _file_events(tmp_path / "raw")
    longer = _median_passes_ms(files["algo-1-27"]) - _median_passes_ms(files["algo-2-27"])
    assert longer == pytest.approx(0.94 * 120, abs=3)  # the passes are 94 % of the work the slack took
    assert "is slower in the forward and backward passes" in found.evidence[2]
    assert found.loop_share == pytest.approx(found.metrics["gap_share"] / 2)
    assert found.metrics["gap_share"] * fast == pytest.approx(longer, abs=6)  # the gap is the passes' difference


def test_balanced_processes_in_lock_step_have_no_straggler(tmp_path):
    """The same job with both processes working the whole step, or both waiting 120 ms at its end: no straggler."""
    for slack in ((0, 0), (120, 120)):
        findings, _, _, _ = _planted_straggler(tmp_path / str(slack[0]), step_ms=420, slack_ms=slack)
        assert "straggler" not in findings, slack


def test_a_wait_before_the_step_makes_it_a_slow_step(tmp_path):
    """8 TRAIN steps wait 2 s for their batch in the GetNext call before them; the TRAIN steps themselves are as
    usual, so the timeline (TRAIN steps only) finds none of them slow. The account's steps do: 8 slow steps, slow in
    waiting for data by exactly the planted calls' time over the median step's wait, and one finding for it."""
    sc = Scenario(init_s=5, final_s=2, step_ms=300, wait_outliers=8, wait_outlier_ms=2000, dataloader_workers=2)
    stats = generate(tmp_path / "raw", nodes=1, cores=4, gpus=1, duration_s=120, scenario=sc)
    planted = stats.planted["nodes"]["algo-1"]["wait_outliers"]
    assert len(planted) == 8
    events = _file_events(tmp_path / "raw")["algo-1-27"]
    train = sorted((s, d) for p, _, s, d in events if p == "Step:ModeKeys.TRAIN")
    getnext = sorted((s, d) for p, _, s, d in events if p == "DataLoaderIter")
    waits = [max(d for s, d in getnext if s < start) for start, _ in (train[int(k)] for k in planted)]
    assert min(waits) > 1_900_000  # µs: the planted wait
    diagnosis = _diagnosed(tmp_path / "raw", tmp_path / "a")
    timeline = json.loads((tmp_path / "a" / "timeline.json").read_text())
    assert timeline["steps"]["algo-1-27"]["count"] == 0  # TRAIN steps alone: none slow
    findings = {f.cause: f for f in diagnosis.findings}
    found = findings["step-outliers"]
    assert found.metrics["worker"] == "algo-1-27" and found.metrics["outlier_steps"] == 8
    assert found.metrics["slow_in"] == "data_wait"
    usual = statistics.median(d for _, d in getnext)
    assert found.metrics["excess_ms_by_slice"]["data_wait"] == pytest.approx(
        sum(w - usual for w in waits) / 1000.0, rel=0.002)
    assert found.seconds == pytest.approx(sum(w - usual for w in waits) / 1e6, rel=0.01)
    assert "the slow steps are slow in waiting for data" in found.evidence[-1]
    assert "step-waste" not in findings  # the same wait is not counted again as waste paid in some steps
