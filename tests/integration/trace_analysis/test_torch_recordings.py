"""PyTorch profiler output as torch writes it: one file per profiling cycle, nested regions, DDP ranks.

The three shared recordings (``../shared/fixtures/raw/torch-cpu-record-*``, read in place) were made
with ``reportgen record`` around a real CPU training run; their SOURCE.md says what was measured
outside reportgen. Synthetic traces below plant the shapes torch produces (many cycles, with_stack
nesting, gzip, a cut file) with known answers.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from reportgen.trace_analysis import analyze_job, find_traces
from reportgen.trace_analysis.ranks import worker_of
from tests.support.paths import RAW, need


def _job(name: str) -> dict:
    doc, problems = analyze_job(find_traces(need(RAW / name)))
    assert problems.total == 0
    return doc


@pytest.mark.fixtures
def test_input_bound_recording_is_one_rank_spending_four_fifths_of_each_step_loading_data():
    doc = _job("torch-cpu-record-inputbound")
    assert list(doc["ranks"]) == ["vm_29949"]  # two cycle files of one process (host vm, pid 29949)
    rank = doc["ranks"]["vm_29949"]
    assert rank["cycles"] == 2 and [s["step"] for s in rank["steps"]] == [2, 3, 4, 7, 8, 9]
    loader = rank["dataloader"]
    # SOURCE.md: the DataLoader takes 81-82 % of each profiled step (423 of 521 ms, 414 of 503 ms).
    assert loader["step_share"] == pytest.approx(0.817, abs=0.005)
    assert loader["iterator"] == "_SingleProcessDataLoaderIter" and loader["workers"] is False
    assert loader["in_steps_ms"] <= sum(s["dur_ms"] for s in rank["steps"])
    assert doc["comparison"]["straggler"] is None and doc["straggler"] is None


@pytest.mark.fixtures
def test_two_worker_recording_is_one_rank_without_straggler_and_little_loading():
    doc = _job("torch-cpu-record-workers2")
    assert list(doc["ranks"]) == ["vm_30238"]
    loader = doc["ranks"]["vm_30238"]["dataloader"]
    assert 0.04 <= loader["step_share"] <= 0.09  # SOURCE.md: 4-9 % of each profiled step
    assert loader["iterator"] == "_MultiProcessingDataLoaderIter" and loader["workers"] is True
    assert doc["straggler"] is None and doc["comparison"]["straggler"] is None


@pytest.mark.fixtures
def test_ddp_recording_has_two_ranks_and_rank_0_is_the_straggler_by_collective_wait():
    doc = _job("torch-cpu-record-ddp2")
    assert sorted(doc["ranks"]) == ["0", "1"] and all(r["cycles"] == 2 for r in doc["ranks"].values())
    wait = {label: r["collectives"] for label, r in doc["ranks"].items()}
    # SOURCE.md: rank 1 waits 918 of 1073 ms of its first cycle's steps in gloo:all_reduce for rank 0.
    assert wait["1"]["in_steps_ms"] > 3 * wait["0"]["in_steps_ms"]
    assert wait["1"]["step_share"] == pytest.approx(0.41, abs=0.02)
    assert "gloo:all_reduce" in wait["1"]["names"]
    straggler = doc["straggler"]
    assert straggler["rank"] == "0" and straggler["method"] == "collective wait"
    assert "data loading" in straggler["reason"]
    assert any("rank 1 waits" in e and "collectives" in e for e in straggler["evidence"])
    # Step times alone would not tell: they are equal within ~2 % in synchronous training.
    assert doc["comparison"]["slowest_excess_pct"] < 5


# --- synthetic traces with the shapes torch writes -----------------------------------------------

def _event(name, ts, dur, cat="user_annotation", tid=100, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 100, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _cycle(first_step: int, t0: float, steps: int = 3, step_us: float = 100_000.0, load_us: float = 60_000.0,
           with_stack: bool = True, rank=None) -> dict:
    events = []
    for i in range(steps):
        start = t0 + i * step_us
        events.append(_event(f"ProfilerStep#{first_step + i}", start, step_us))
        events.append(_event("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", start + 10, load_us))
        if with_stack:  # the same time again as Python frames, nested two deep
            events.append(_event("torch/utils/data/dataloader.py(631): __next__", start + 20, load_us - 20,
                                 cat="python_function"))
            events.append(_event("torch/utils/data/dataloader.py(675): _next_data", start + 30, load_us - 40,
                                 cat="python_function"))
        events.append(_event("aten::conv2d", start + load_us + 100, step_us - load_us - 200, cat="cpu_op"))
    doc = {"schemaVersion": 1, "traceEvents": events}
    if rank is not None:
        doc["distributedInfo"] = {"backend": "gloo", "rank": rank, "world_size": 2}
    return doc


def _write(path: Path, doc: dict, gz: bool = False) -> Path:
    data = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def test_nested_same_region_events_are_counted_once_within_the_trace_span(tmp_path):
    _write(tmp_path / "host_7.1795443941801144852.pt.trace.json", _cycle(1, 1_000_000.0, with_stack=True))
    doc, _ = analyze_job(find_traces(tmp_path))
    rank = doc["ranks"]["host_7"]
    loader = rank["dataloader"]
    assert loader["events"] == 9 and loader["count"] == 3  # 9 nested events, 3 outermost intervals
    assert loader["total_ms"] == pytest.approx(180.0)  # 3 x 60 ms, not 3 x (60 + 59.98 + 59.96)
    assert loader["total_ms"] <= rank["span_ms"]
    assert loader["step_share"] == pytest.approx(0.6)


def test_one_process_with_many_gzip_cycles_is_one_rank_and_time_between_cycles_never_counts(tmp_path):
    for i in range(8):  # repeat=0: a cycle every 5 s, three profiled steps each
        _write(tmp_path / f"vm_42.{1795443941801144852 + i}.pt.trace.json.gz",
               _cycle(1 + 5 * i, 1_000_000.0 + i * 5_000_000.0), gz=True)
    _write(tmp_path / "vm_43.1795443941801144852.pt.trace.json", _cycle(1, 1_000_000.0))  # another process
    doc, problems = analyze_job(find_traces(tmp_path))
    assert sorted(doc["ranks"]) == ["vm_42", "vm_43"] and problems.total == 0
    rank = doc["ranks"]["vm_42"]
    assert rank["cycles"] == 8 and len(rank["steps"]) == 24
    assert rank["span_ms"] == pytest.approx(8 * 300.0, rel=1e-6)  # not the 35 s from first to last cycle
    assert rank["dataloader"]["step_share"] == pytest.approx(0.6)


def test_interrupted_ddp_run_keeps_both_ranks_and_notes_the_cut_file(tmp_path):
    for rank in (0, 1):
        _write(tmp_path / f"vm_{10 + rank}.1795443941801144852.pt.trace.json", _cycle(1, 1e6, rank=rank))
    cut = json.dumps(_cycle(6, 2e6, rank=1))
    (tmp_path / "vm_11.1795443942801144852.pt.trace.json").write_text(cut[: len(cut) // 2])
    doc, problems = analyze_job(find_traces(tmp_path))
    assert sorted(doc["ranks"]) == ["0", "1"]
    assert doc["ranks"]["1"]["cycles"] == 2 and doc["ranks"]["1"]["complete"] is False
    assert problems.total >= 1


def test_worker_names_follow_torchs_trace_handler():
    assert worker_of(Path("vm_763.1795444171301055440.pt.trace.json")) == "vm_763"
    assert worker_of(Path("my.host_12.1623143089861.pt.trace.json.gz")) == "my.host_12"
    assert worker_of(Path("rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")) is None


# --- GPU idle two ways, against Holistic Trace Analysis -------------------------------------------

# HolisticTraceAnalysis 0.5.0 on this fixture (installed outside the project, not a dependency):
# TraceAnalysis(trace_dir, include_last_profiler_step=True).get_temporal_breakdown() with
# HTA_DISABLE_NS_ROUNDING=1 (HTA otherwise ceils ns-resolution starts and floors ends to whole µs, which
# widens every gap) gives idle_time 7574.786 µs of kernel_time 480029.227 µs (1.58 %); its idle time
# breakdown: host_wait 1290.81 µs, kernel_wait 6283.98 µs, other 0.
HTA_WINDOW_US, HTA_IDLE_US = 480029.227, 7574.786


@pytest.mark.fixtures
def test_gpu_idle_within_the_active_window_equals_htas_temporal_breakdown():
    doc = _job("hta-resnet-v100-1gpu")
    gpu = doc["ranks"]["0"]["gpu"]
    assert gpu["window_ms"] * 1000 == pytest.approx(HTA_WINDOW_US, rel=1e-6)
    assert gpu["window_idle_share"] == pytest.approx(HTA_IDLE_US / HTA_WINDOW_US, rel=0.01)
    split = gpu["window_idle_split_ms"]
    assert sum(split.values()) == pytest.approx(gpu["window_idle_ms"], rel=1e-9)
    assert split["host_wait"] * 1000 == pytest.approx(1290.81, rel=0.05)
    assert split["kernel_wait"] * 1000 == pytest.approx(6283.98, rel=0.05) and split["other"] == 0
    # Over the whole trace the GPU is idle far longer: CPU-only time before the first kernel counts there.
    assert 100 - gpu["active_pct"] == pytest.approx(20.0, abs=0.05)
    assert 100 * gpu["window_idle_share"] == pytest.approx(1.58, abs=0.005)


# --- compare of two recordings ------------------------------------------------------------------

@pytest.mark.fixtures
def test_compare_of_the_input_bound_and_two_worker_runs_reports_duration_throughput_and_coverage(tmp_path):
    from reportgen.compare.run import compare

    out = tmp_path / "compare.html"
    compare(str(need(RAW / "torch-cpu-record-inputbound")), str(need(RAW / "torch-cpu-record-workers2")), out)
    sections = json.loads(out.with_suffix(".json").read_text())["sections"]
    verdict = sections["verdict"]
    assert verdict["duration_a_s"] == 53 and verdict["duration_b_s"] == 44
    assert round(verdict["duration_delta_pct"]) == -17  # SOURCE.md: 17 % shorter
    # Same work in 44 s instead of 53 s: 53/44 - 1 = +20.5 % (SOURCE.md measured 21 % more samples/s).
    assert verdict["throughput"]["job_same_work_change_pct"] == pytest.approx(20.45, abs=0.01)
    assert "+20.5 % throughput" in verdict["text"]
    traces = sections["step-durations"]["traces"]
    # The profiled steps (6 of 250 per run, ~1 s) cover 1-2 % of each job.
    assert 0.015 < traces["a"]["coverage"] < 0.025 and 0.01 < traces["b"]["coverage"] < 0.02
    assert "1.9 % of A and 1.4 % of B" in verdict["text"]
    assert traces["a"]["dataloader_share"] == pytest.approx(0.817, abs=0.005)
    assert traces["b"]["iterators"] == ["_MultiProcessingDataLoaderIter"]
    ops = sections["operators"]["traces"]["rows"]
    assert len(ops) == 10 and all(r["a_ms_per_step"] and r["b_ms_per_step"] for r in ops)
    html = out.read_text(encoding="utf-8")
    assert "has no CPU operator data" not in html and "no step information" not in html.lower()
    assert 'id="trace-steps-compare"' in html
    assert "Step durations in milliseconds per node" in html  # profiler steps last ms, not 0.17 s


def test_reused_folder_with_gzip_traces_of_two_runs_is_not_a_straggler(tmp_path):
    """Two single-process runs wrote into the same folder, minutes apart, one twice as slow: two processes,
    not two ranks of one job; their steps are never compared (no false straggler)."""
    for i in range(2):
        _write(tmp_path / f"vm_500.{1795443941801144852 + i}.pt.trace.json.gz",
               _cycle(1 + 5 * i, 1e9 + i * 5e6), gz=True)
        _write(tmp_path / f"vm_900.{1795444941801144852 + i}.pt.trace.json.gz",
               _cycle(1 + 5 * i, 1.6e9 + i * 5e6, step_us=200_000.0), gz=True)
    doc, problems = analyze_job(find_traces(tmp_path))
    assert sorted(doc["ranks"]) == ["vm_500", "vm_900"] and problems.total == 0
    assert doc["straggler"] is None and doc["comparison"]["method"] == "not compared"
    assert all(r["cycles"] == 2 for r in doc["ranks"].values())


# --- the whole report of each recording (system metrics + traces), as a user generates it -----------

@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    from reportgen.pipeline import generate

    out = {}
    for name in ("inputbound", "workers2", "ddp2"):
        html = tmp_path_factory.mktemp(name) / "report.html"
        generate(str(need(RAW / f"torch-cpu-record-{name}")), html)
        out[name] = (json.loads(html.with_suffix(".json").read_text()), html.read_text(encoding="utf-8"))
    return out


@pytest.mark.fixtures
def test_input_bound_report_leads_with_the_input_pipeline_and_num_workers(reports):
    doc, html = reports["inputbound"]
    assert len(doc["sections"]["gpu-kernels-operators"]["ranks"]) == 1
    first = doc["diagnosis"]["findings"][0]
    assert first["cause"] == "input-pipeline"
    # the impact is what the fix saves, not the DataLoader's share: 1 worker on 2 cores overlaps loading with the
    # rest of the step, which then takes the loading's 82 %: 18 % of the loop (the run with workers saved 17 %)
    assert first["impact"]["loop_share"] == pytest.approx(1 - 0.817, abs=0.005)
    assert any("82 % of the profiled step time in the DataLoader" in e for e in first["evidence"])
    assert "num_workers from 0 to 1" in first["fix"]
    assert doc["sections"]["dataloading-analysis"]["trace_dataloader_share"] == pytest.approx(0.817, abs=0.005)
    assert "they cover only the profiled steps (1.0 s per rank, 1.9 % of the 53 s job)" in html
    # The system-usage text's "smaller instance" is answered by the traces: the idle cores are the fix.
    assert "Put the idle cores to work with DataLoader workers (num_workers) before choosing a smaller" in html
    for contradiction in ("No step information was profiled", "No CPU operators were recorded",
                          "No data-loading events were recorded", "Mode: None"):
        assert contradiction not in html


@pytest.mark.fixtures
def test_two_worker_report_has_one_rank_and_no_straggler(reports):
    doc, _ = reports["workers2"]
    kineto = doc["sections"]["gpu-kernels-operators"]
    assert len(kineto["ranks"]) == 1 and kineto["comparison"]["straggler"] is None
    assert all(f["cause"] != "straggler" for f in doc["diagnosis"]["findings"])


@pytest.mark.fixtures
def test_ddp_report_names_rank_0_as_the_straggler_from_collective_wait(reports):
    doc, html = reports["ddp2"]
    kineto = doc["sections"]["gpu-kernels-operators"]
    assert sorted(kineto["ranks"]) == ["0", "1"]
    assert kineto["comparison"]["straggler"] == "0" and kineto["comparison"]["method"] == "collective wait"
    straggler = next(f for f in doc["diagnosis"]["findings"] if f["cause"] == "straggler")
    assert "rank 0" in " ".join(straggler["evidence"]) and any("in collectives" in e for e in straggler["evidence"])
    assert "Rank 0 is the straggler" in html and 'id="kineto-wait-by-rank"' in html


def test_straggler_from_collective_wait_without_profiler_steps(tmp_path):
    """Traces recorded without a schedule (no ProfilerStep#N): the wait is measured over the traced span."""
    for rank, wait_us in ((0, 5_000.0), (1, 60_000.0)):  # rank 1 waits 60 of 100 ms: rank 0 is late
        events = [_event("aten::conv2d", 1e6, 100_000.0, cat="cpu_op"),
                  _event("gloo:all_reduce", 1e6 + 100_000.0 - wait_us, wait_us, tid=7)]
        _write(tmp_path / f"vm_{20 + rank}.1795443941801144852.pt.trace.json",
               {"schemaVersion": 1, "traceEvents": events, "distributedInfo": {"rank": rank, "world_size": 2}})
    doc, _ = analyze_job(find_traces(tmp_path))
    assert doc["straggler"]["rank"] == "0" and doc["straggler"]["method"] == "collective wait"
    assert any("of profiled time in collectives" in e for e in doc["straggler"]["evidence"])


HOSTILE_RANK = {"steps": 5, "files": 3, "cycles": 1e300, "start_us": "x", "dataloader": {"step_share": "NaN",
                "iterator": ["_SingleProcessDataLoaderIter"], "workers": "no", "per_step_ms": None},
                "collectives": {"count": 2, "names": "gloo", "step_share": 2.0}, "cpu_ops": {"top": 7, "count": "x"},
                "gpu": {"window_ms": 5.0, "window_idle_ms": "a", "window_idle_split_ms": [1], "has_gpu_activity": 1},
                "step_stats_ms": [], "gpu_ids": 3, "devices": 2, "kernels": {"top": "k"}, "memory_ops": {}}


@pytest.mark.parametrize("rank", [HOSTILE_RANK, {**HOSTILE_RANK, "steps": [None, 3, {"step": True, "dur_ms": "1"}]},
                                  {**HOSTILE_RANK, "dataloader": {"step_share": 0.9, "workers": False, "iterator": 4}}])
def test_a_hostile_kineto_json_costs_no_section(rank):
    """kineto.json can come with a user's rule-output folder: odd values never break a section."""
    from reportgen.compare.traces import operators_blocks, steps_blocks, summarize
    from reportgen.report.build import build_report
    from reportgen.rule_outputs import RuleOutputs

    made = RuleOutputs(folder=Path("."))
    made.traces = {"ranks": {"0": rank, "1": "nonsense"}, "comparison": {"straggler": "0", "evidence": "e",
                                                                          "method": "collective wait"}}
    report = build_report(made)
    assert not [n for n in report.notes if "could not be built" in n]
    summary = summarize(made.traces, 10)
    steps_blocks(summary, summary, 10, 9)
    operators_blocks(summary, summary)


@pytest.mark.fixtures
@pytest.mark.parametrize("name", ["kineto-resnet50-num-workers-0", "hta-trace-diff-rank3of8", "hta-sampled-128rank"])
def test_gpu_idle_two_ways_are_consistent_on_real_gpu_traces(name):
    doc = _job(name)
    for label, rank in doc["ranks"].items():
        gpu = rank["gpu"]
        assert gpu["has_gpu_activity"], label
        split = gpu["window_idle_split_ms"]
        assert sum(split.values()) == pytest.approx(gpu["window_idle_ms"], rel=1e-9, abs=1e-9)
        assert 0 < gpu["window_ms"] <= rank["span_ms"] + 1e-6
        assert 0 <= gpu["window_idle_ms"] <= gpu["idle_ms"] + 1e-6  # the window excludes CPU-only stretches
        assert split["host_wait"] > 0  # these runs launch kernels one by one from Python


@pytest.mark.fixtures
def test_trace_step_outlier_with_few_steps_is_not_evaluated_but_can_be_with_many(tmp_path):
    """The traces' StepOutlier fires on a rank only with more than n_outliers (10) outliers: six profiled
    steps can never make it fire, so it is 'not evaluated', never a pass."""
    from reportgen.diagnosis.evaluation import NOT_EVALUATED, PASSED, evaluate_rule
    from reportgen.trace_analysis.outputs import step_outlier_rule

    doc = _job("torch-cpu-record-inputbound")
    rule = step_outlier_rule(doc)
    params = [tuple(line.split(":", 1)) for line in rule["RuleParameters"].splitlines()]  # as RuleOutput parses
    state, reason = evaluate_rule("StepOutlier", rule["RuleTriggered"], rule["Datapoints"], params, rule["Details"])
    assert state == NOT_EVALUATED and "at most 6 profiled steps per rank" in reason
    for i in range(8):
        _write(tmp_path / f"vm_1.{1795443941801144852 + i}.pt.trace.json", _cycle(1 + 5 * i, 1e9 + i * 5e6))
    many, _ = analyze_job(find_traces(tmp_path))
    rule = step_outlier_rule(many)
    assert evaluate_rule("StepOutlier", rule["RuleTriggered"], rule["Datapoints"], params, rule["Details"])[0] == PASSED
