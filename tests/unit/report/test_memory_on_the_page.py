"""Memory on the page (issue 48): the timeline never labels memory-controller activity as GPU memory; the PyTorch
profiler section shows each device's memory from the trace's allocator events."""

from reportgen.report.sections.timeline import gpu_panel
from reportgen.timeline_view import TimelineSeries


def test_controller_activity_and_memory_in_use_are_two_labelled_lines():
    series = {"gpu0/GPUUtilization": TimelineSeries([50.0, 60.0]), "gpu0/GPUMemoryUtilization": TimelineSeries([0.0, 93.0]),
              "gpu0/GPUMemoryUsedPercent": TimelineSeries([40.0, 41.0])}
    panel = gpu_panel(series)
    assert list(panel) == ["GPU utilization", "GPU memory-controller activity", "GPU memory in use"]
    assert panel["GPU memory-controller activity"].mean == [0.0, 93.0]
    assert panel["GPU memory in use"].mean == [40.0, 41.0] and panel["GPU memory in use"].kind == "gpu_memory_used"
    # SageMaker's data: controller activity alone, never called memory in use
    assert list(gpu_panel({k: v for k, v in series.items() if "Used" not in k})) == [
        "GPU utilization", "GPU memory-controller activity"]


def test_the_profiler_section_shows_each_devices_memory_from_the_trace():
    from reportgen.report.sections.gpu_kernels_operators import _rank_blocks
    from reportgen.trace_ranks import TraceRank
    from reportgen.trace_analysis import analyze_job, find_traces
    from tests.support.paths import RECORDINGS

    doc, _ = analyze_job(find_traces(RECORDINGS / "cpu-memory" / "leak"))
    (label, rank), = doc["ranks"].items()
    (table,) = [b for b in _rank_blocks(label, TraceRank.of(label, rank)) if getattr(b, "id", "").startswith("kineto-allocator-")]
    (row,) = table.rows
    assert row[0] == "cpu" and row[2] == 9 and row[3] is None and row[4] is None  # the CPU reserves nothing
    assert row[5] == 4.0 and row[6] == "grows every step"  # MiB a step: the planted 4 MiB
    assert row[7].startswith("aten::full (32.0 MiB)")
    rank.pop("memory")
    assert not [b for b in _rank_blocks(label, TraceRank.of(label, rank)) if getattr(b, "id", "").startswith("kineto-allocator-")]
