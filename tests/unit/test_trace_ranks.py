"""kineto.json's per-rank view (trace_ranks.TraceRank), its ranks' comparison (TraceComparison) and its job-wide
tables (TraceJob): built from the trace analysis of real recordings, and
from entries with missing and garbage values, which must give None / an empty view, never raise."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.rule_outputs import RuleOutputs
from reportgen.trace_analysis import analyze_job, find_traces
from reportgen.trace_gpu_analysis import BreakdownStep, GpuAnalysis
from reportgen.trace_ranks import (JobRow, JobTable, RankRow, RankTable, TraceCollectives, TraceComparison, TraceJob,
                                   TraceLoader, TraceRank, TraceStep, trace_ranks_of)
from tests.support.paths import RAW, need

HUGE = 10**400


@pytest.mark.fixtures
def test_a_recorded_cpu_run_with_dataloader_workers():
    doc, _ = analyze_job(find_traces(need(RAW / "torch-cpu-record-workers2")))
    rank = trace_ranks_of(doc)["vm_30238"]
    assert rank.is_object and rank.workers == ("vm_30238",) and rank.span_ms == 599.163
    assert len(rank.steps) == 6 and rank.steps[:2] == (TraceStep(2, 0.5765, 118.834116), TraceStep(3, 119.493, 90.470416))
    assert isinstance(rank.steps[0].step, int)  # kept as given: "ProfilerStep#2", not 2.0
    assert rank.dataloader == TraceLoader(0.06407986903707229, 6.387208333333334, 38.32325,
                                          "_MultiProcessingDataLoaderIter", True, 38.32325)
    assert rank.step_mean_ms == 99.6757395 and rank.cpu_op_count == 1876
    assert rank.step_max_ms == max(s.dur_ms for s in rank.steps) == 121.25246899999999
    assert not rank.has_gpu_activity and rank.gpu_active_pct == 0.0 and rank.collective_share is None
    assert rank.cpu_ops.top[0].name == doc["ranks"]["vm_30238"]["cpu_ops"]["top"][0]["name"]
    assert rank.kernels == RankTable((), 0, 0.0, 0) and not rank.gpu_analysis.listed  # a CPU run: no kernels, no HTA


@pytest.mark.fixtures
def test_a_gloo_rank_waiting_in_collectives():
    doc, _ = analyze_job(find_traces(need(RAW / "hta-cpu-only-gloo")))
    rank = trace_ranks_of(doc)["34"]
    assert rank.steps == (TraceStep(551, 4.29075, 210.109162),)
    assert round(rank.collective_share, 4) == 0.8509 and rank.cpu_op_count == 4
    assert rank.dataloader.step_share is None and rank.dataloader.iterator is None  # no DataLoader events
    assert (rank.start_us, rank.end_us) == (1721065959525586.0, 1721065960815112.0)


def test_garbage_entries_are_none_not_an_error():
    doc = {"ranks": {
        "0": {"steps": [{"step": "5", "start_ms": HUGE, "dur_ms": float("nan")}, 7, {"step": 3.0, "dur_ms": 2}],
              "start_us": True, "span_ms": "long", "step_stats_ms": [], "gpu": {"has_gpu_activity": 1,
                                                                                 "active_pct": float("inf")},
              "dataloader": {"step_share": "half", "iterator": 5, "workers": "yes", "total_ms": 3},
              "collectives": None, "workers": "vm_1"},
        "1": "not a rank",
        "2": {"steps": "none", "dataloader": []}}}
    ranks = trace_ranks_of(doc)
    assert list(ranks) == ["0", "1", "2"]
    r0 = ranks["0"]
    assert r0.steps == (TraceStep(), TraceStep(), TraceStep(3.0, None, 2))
    assert (r0.start_us, r0.span_ms, r0.step_mean_ms, r0.step_max_ms, r0.gpu_active_pct, r0.gpu_window_idle_share,
            r0.collective_share) == (None,) * 7
    assert r0.has_gpu_activity and r0.workers == ()
    assert r0.dataloader == TraceLoader(total_ms=3)
    assert r0.collectives == TraceCollectives() and r0.kernels == RankTable() and r0.gpu_analysis == GpuAnalysis()
    odd = TraceRank.of("3", {"kernels": {"top": [None, {"name": 7, "launches": "many", "min_us": HUGE}], "count": True},
                             "gpu_ids": ["0", 1], "devices": ["A100"], "gpu_mix_ms": {"kernel": "x"},
                             "step_hist": {"counts": [1], "edges": "0-1"},
                             "gpu_analysis": {"launch": {"kernels": 3, "launch_delay_us": [1]}, "sync": [],
                                              "step_breakdown": {"categories": ["kernel"], "steps": [{"step": 1}]}}})
    assert odd.kernels.top == (RankRow(), RankRow("7", durations=True)) and odd.kernels.count is None
    assert odd.gpu_ids == (1,) and odd.devices == ("A100",) and odd.gpu_mix_ms == {"kernel": None}
    assert odd.step_hist is None  # edges that are no list: no histogram
    assert odd.gpu_analysis.listed and odd.gpu_analysis.launch.kernels == 3
    assert odd.gpu_analysis.launch.launch_delay_us == {} and odd.gpu_analysis.sync.calls is None
    assert odd.gpu_analysis.step_breakdown.steps[0].ms == {"kernel": None}
    assert ranks["1"] == TraceRank("1") and not ranks["1"].is_object and ranks["1"].step_list == ()
    assert ranks["2"].is_object and ranks["2"].steps is None and ranks["2"].dataloader is None
    assert trace_ranks_of(None) == {} and trace_ranks_of({"ranks": [1]}) == {}



def test_rule_outputs_read_their_ranks_once_per_document():
    """A report asks for kineto.json's ranks in six places: RuleOutputs reads them once, and again only for a
    document assigned anew."""
    doc = {"ranks": {"0": {"steps": [{"step": 1, "start_ms": 0.0, "dur_ms": 5.0}], "span_ms": 5.0}, "1": "not a rank"}}
    outputs = RuleOutputs(folder=Path("job"), traces=doc)
    first, second = outputs.trace_ranks(), outputs.trace_ranks()
    assert first == second == trace_ranks_of(doc) and first is not second  # each caller its own dict
    assert first["0"] is second["0"] and first["0"].span_ms == 5.0 and first["0"].steps == (TraceStep(1, 0.0, 5.0),)
    first.pop("0")
    assert list(outputs.trace_ranks()) == ["0", "1"]  # a caller's dict is its own
    outputs.traces = {"ranks": {"7": {"span_ms": 2.5}}}
    assert list(outputs.trace_ranks()) == ["7"] and outputs.trace_ranks()["7"].span_ms == 2.5
    outputs.traces = None
    assert outputs.trace_ranks() == {} and RuleOutputs(folder=Path("job")).trace_ranks() == {}

@pytest.mark.fixtures
def test_a_gpu_rank():
    doc, _ = analyze_job(find_traces(need(RAW / "hta-resnet-v100-1gpu")))
    rank = trace_ranks_of(doc)["0"]
    assert rank.has_gpu_activity and round(rank.gpu_active_pct, 2) == 80.03
    assert round(rank.gpu_window_idle_share, 4) == 0.0158
    assert (round(rank.step_mean_ms, 4), round(rank.step_max_ms, 4)) == (78.8282, 95.699)
    assert rank.gpu.window_idle_split_ms == {"host_wait": 1.25925, "kernel_wait": 6.3075, "other": 0.0}
    assert (rank.kernels.distinct, rank.kernels.count, rank.kernels.total_ms) == (77, 4350, 468.153602)
    top = rank.kernels.top[0]
    assert top.name.startswith("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add")
    assert (top.count, top.min_us, top.max_us, top.durations) == (160, 48.255, 378.686, True)
    assert rank.gpu_ids == (0,) and rank.devices[0] == "Tesla V100-SXM2-32GB" and rank.cycles == 1
    assert rank.collectives.names == ("record_param_comms", "c10d::allreduce_", "nccl:all_reduce")
    ga = rank.gpu_analysis
    assert (ga.launch.kernels, ga.launch.kernels_per_step, ga.launch.launch_delay_us["p50"]) == (4350, 870.0, 77149.5)
    assert (ga.critical_path.step, ga.critical_path.path_ms) == (104, 95.66325)
    assert ga.step_breakdown.steps[0] == BreakdownStep(101, {
        "kernel": 29.04375, "memcpy": 0.21875, "memset": 0.0175, "communication": 0.129, "runtime": 0.90475,
        "dataloader": 0.0, "cpu_exec": 1.25875, "other": 3.54325})
    assert ga.tensor_cores.has_tensor_cores and ga.tensor_cores.compute_capability == 7.0
    assert ga.sync.by_operator == {"(no operator: a direct CUDA call)": 1} and ga.sync.calls == 1
    assert (ga.kernel_patterns[0].length, ga.kernel_patterns[0].count, ga.memcpy[0].kind) == (8, 35, "DtoD")


@pytest.mark.fixtures
def test_the_comparison_of_two_recorded_ranks():
    doc, _ = analyze_job(find_traces(need(RAW / "torch-cpu-record-ddp2")))
    c = TraceComparison.of(doc)
    assert (c.straggler, c.method, c.slowest, c.least_wait_rank, c.why) == ("0", "collective wait", "0", "0", None)
    assert c.reason == "its data loading takes 226 ms per step against 131 ms on the other rank"
    assert len(c.evidence) == 2 and c.evidence[1] == "rank 0 waits only 249 ms, 11 % of its profiled steps"
    assert (round(c.its_wait_share, 4), round(c.others_median_wait_share, 4)) == (0.1104, 0.4095)
    assert (round(c.slowest_excess_pct, 3), round(c.median_step_ms, 3)) == (1.114, 372.231)
    assert (c.margin_pct, c.wait_gap_pct) == (5.0, 10.0)
    one = TraceComparison.of(analyze_job(find_traces(need(RAW / "torch-cpu-record-workers2")))[0])
    assert (one.straggler, one.slowest, one.method, one.median_step_ms, one.margin_pct) == (None, None, None, None, 5.0)


def test_a_garbage_comparison_is_none_not_an_error():
    doc = {"comparison": {"straggler": [1], "method": 3, "reason": {"a": 1}, "evidence": "rank 1 waits",
                          "slowest": 7, "slowest_excess_pct": "12", "median_step_ms": HUGE, "margin_pct": True,
                          "wait_gap_pct": float("nan"), "detail": {"rank": False, "its_wait_share": 0.25,
                                                                   "others_median_wait_share": "x", "why": 5}}}
    assert TraceComparison.of(doc) == TraceComparison(slowest=7, its_wait_share=0.25)
    assert TraceComparison.of({"comparison": {"detail": "x", "evidence": ["a", 2]}}) == TraceComparison(evidence=("a", 2))
    assert TraceComparison.of(None) == TraceComparison() == TraceComparison.of({"comparison": [1]})


@pytest.mark.fixtures
def test_the_job_tables_of_two_recorded_ranks():
    doc, _ = analyze_job(find_traces(need(RAW / "torch-cpu-record-ddp2")))
    job = TraceJob.of(doc)
    assert job.listed and job.ranks == 2 and isinstance(job.ranks, int)
    assert job.kernels == JobTable(top=(), distinct=0, total_ms=0.0, count=0)  # a CPU run: no kernels
    assert (job.cpu_ops.distinct, job.cpu_ops.count, job.cpu_ops.total_ms, len(job.cpu_ops.top)) == (73, 5280, None, 15)
    first = job.cpu_ops.top[0]
    assert first.name == "autograd::engine::evaluate_function: ConvolutionBackward0" and first.count == 36
    assert (round(first.total_ms, 3), round(first.min_rank_ms, 3), round(first.max_rank_ms, 3)) == (460.867, 206.754,
                                                                                                    254.113)
    assert (first.ranks, first.max_rank, first.pct) == (2, "0", None)


def test_garbage_job_tables_are_none_not_an_error():
    doc = {"job": {"ranks": True, "kernels": {"top": [7, {"name": 5, "total_ms": "3", "launches": HUGE, "pct": 12.5,
                                                          "max_rank": [0]}], "distinct": "many", "count": 4},
                   "cpu_ops": {"top": "none", "total_ms": float("nan")}}}
    job = TraceJob.of(doc)
    assert job == TraceJob(True, None, JobTable((JobRow(), JobRow(pct=12.5)), None, None, 4), JobTable())
    assert TraceJob.of({"job": {}}) == TraceJob() == TraceJob.of(None) == TraceJob.of({"job": [1]})


def test_the_traces_are_named_for_their_format():
    """#49: JAX / TensorFlow reports called themselves "PyTorch profiler traces"."""
    from reportgen.trace_ranks import doc_traces_name, traces_name

    assert traces_name(["a/vm.xplane.pb", "b/vm2.xplane.pb.gz"]) == "JAX / TensorFlow profiler traces"
    assert traces_name(["vm.xplane.pb", "w0.pt.trace.json"]) == "PyTorch profiler traces"  # mixed: as before
    assert traces_name([]) == "PyTorch profiler traces"
    assert doc_traces_name({"ranks": {"vm": {"file": "vm.xplane.pb.gz", "files": ["vm.xplane.pb.gz"]}}}) == (
        "JAX / TensorFlow profiler traces")
    assert doc_traces_name({"ranks": {"0": {"file": "w0.pt.trace.json.gz"}}}) == "PyTorch profiler traces"
    assert doc_traces_name(None) == "PyTorch profiler traces"
