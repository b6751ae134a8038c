"""compare's own typed values (issue 47): the trace summary, a metric over all nodes and a run's meta write
compare.json's objects with the keys, in the order, that the dicts they replaced had."""

from __future__ import annotations

from reportgen.compare.output import RunMeta, compare_data
from reportgen.compare.sections.utilization import OverallUsage, overall_usage
from reportgen.compare.traces import GpuSummary, TraceSummary, kernels_blocks, operators_blocks
from reportgen.report.model import Report
from reportgen.report.views import UsageRow

GPU = GpuSummary(kernel_ms_per_step=12.5, kernels_per_step=40.0, breakdown_ms_per_step={"kernel": 12.5},
                 kernel_ms_per_step_by_name={"sgemm": 10.0, "relu": 2.5}, kernel_ms_per_step_exact=True)


def _summary(gpu: GpuSummary | None = GPU, ops: dict | None = None, ranks: int = 1) -> TraceSummary:
    return TraceSummary(ranks=ranks, profiled_steps=6.0, step_numbers=[1, 6], profiled_s=1.2, job_s=60.0,
                        coverage=0.02, mean_step_ms=200.0, steps_per_s=5.0, dataloader_share=0.1,
                        dataloader_per_step_ms=20.0, iterators=["_SingleProcessDataLoaderIter"],
                        collective_share=None, op_ms_per_step=ops or {"aten::conv2d": 50.0},
                        op_ms_per_step_exact=True, gpu=gpu)


def test_the_trace_summary_writes_compare_jsons_keys_in_order():
    data = _summary().as_data()
    assert list(data) == ["ranks", "profiled_steps", "step_numbers", "profiled_s", "job_s", "coverage",
                          "mean_step_ms", "steps_per_s", "dataloader_share", "dataloader_per_step_ms", "iterators",
                          "collective_share", "op_ms_per_step", "op_ms_per_step_exact", "gpu"]
    assert list(data["gpu"]) == ["kernel_ms_per_step", "kernels_per_step", "comm_comp_overlap_pct",
                                 "exposed_comm_per_step_ms", "window_idle_pct", "breakdown_ms_per_step",
                                 "kernel_ms_per_step_by_name", "kernel_ms_per_step_exact"]
    assert data["gpu"]["kernel_ms_per_step_by_name"] == {"sgemm": 10.0, "relu": 2.5}
    assert _summary(gpu=None).as_data()["gpu"] is None


def test_a_side_without_gpu_kernels_is_an_empty_object_as_before():
    _, data = kernels_blocks(_summary(), _summary(gpu=None))
    assert data["b"] == {} and "kernel_ms_per_step_by_name" not in data["a"]
    assert data["a"]["kernel_ms_per_step"] == 12.5
    assert [k["kernel"] for k in data["kernels"]] == ["sgemm", "relu"]
    assert {k["status"] for k in data["kernels"]} == {"gone from B's top 15"}
    assert kernels_blocks(_summary(gpu=None), None) == ([], {})


def test_operators_per_step_compare_by_name():
    _, data = operators_blocks(_summary(ops={"a": 3.0, "b": 1.0}), _summary(ops={"a": 2.0, "c": 5.0}, ranks=2))
    assert data["rows"] == [{"operator": "c", "a_ms_per_step": None, "b_ms_per_step": 5.0},
                            {"operator": "a", "a_ms_per_step": 3.0, "b_ms_per_step": 2.0},
                            {"operator": "b", "a_ms_per_step": 1.0, "b_ms_per_step": None}]


def test_a_metric_over_all_nodes():
    rows = {("GPU", "algo-1"): UsageRow("algo-1", "GPU", "percentage", max=90, p95=80, p50=40, min=0),
            ("GPU", "algo-2"): UsageRow("algo-2", "GPU", "percentage", max=70, p95=60, p50=None, min=5),
            ("Network", "algo-1"): UsageRow("algo-1", "Network", "bytes", p95=1e6)}
    overall = overall_usage(rows)
    assert overall["GPU"] == OverallUsage(metric="GPU", unit="percentage", nodes=2, max=90, p95=70.0, p50=40.0, min=0)
    assert overall["Network"] == OverallUsage(metric="Network", unit="bytes", nodes=1, p95=1e6)
    assert overall["GPU"].stat("p95") == 70.0 and overall["GPU"].node == ""


def test_a_runs_meta_is_compare_jsons_a_and_b():
    meta = RunMeta("A", "job-1", "/data/run1", "rule outputs", "ml.p3.2xlarge", 2, "command line", None)
    data = compare_data(Report(job_name="x", sections=[]), meta, RunMeta("B", "job-2", "s3://b/c", "raw"), "now")
    assert data["a"] == {"label": "A", "name": "job-1", "source": "/data/run1", "description": "rule outputs",
                         "instance_type": "ml.p3.2xlarge", "instance_count": 2, "instance_from": "command line",
                         "region": None}
    assert list(data["b"]) == list(data["a"]) and data["b"]["instance_type"] is None
