"""The top CPU and GPU operators of A and B, rank by rank (and the PyTorch traces' CPU operators)."""

from __future__ import annotations

from reportgen.compare import traces
from reportgen.compare.side import Side
from reportgen.report.json_views import OperatorRow, OperatorTable
from reportgen.report.model import Heading, Section, Table, Text

TOP_OPERATORS = 10


def build(a: Side, b: Side) -> Section:
    section = Section("operators", "Top operators")
    data = {}
    trace_blocks, trace_data = traces.operators_blocks(a.traces(), b.traces())
    kernel_blocks, kernel_data = traces.kernels_blocks(a.traces(), b.traces())
    for kind in ("cpu", "gpu"):
        sid = f"{kind}-operators-overview"
        ta, tb = OperatorTable.of(a.data(sid)), OperatorTable.of(b.data(sid))
        ra, rb = ta.written[:TOP_OPERATORS], tb.written[:TOP_OPERATORS]  # as written, for compare.json
        section.add(Heading(f"{kind.upper()} operators", 4))
        data[kind] = {"a": ra, "b": rb}
        for side, rows in ((a, ra), (b, rb)):
            summary = side.traces()
            if not rows and kind == "cpu" and summary and summary.op_ms_per_step:
                section.add(Text(f"{side.label} has no SageMaker Debugger CPU operator data; its PyTorch profiler "
                                 "traces' CPU operators are compared below.", tone="note"))
            elif not rows and kind == "gpu" and summary and summary.gpu:
                section.add(Text(f"{side.label} has no SageMaker Debugger GPU operator data; its PyTorch profiler "
                                 "traces' GPU kernels are compared below.", tone="note"))
            elif not rows:
                section.add(Text(f"{side.label} has no {kind.upper()} operator data (detailed framework profiling "
                                 "was off, or no operator took more than 2 % of the time).", tone="missing"))
        if kind == "cpu" and trace_blocks:
            section.add(*trace_blocks)
        if kind == "gpu" and kernel_blocks:
            section.add(*kernel_blocks)
        if not (ra or rb):
            continue
        table_rows = []
        va, vb = ta.rows[:TOP_OPERATORS], tb.rows[:TOP_OPERATORS]
        for i in range(max(len(va), len(vb))):
            xa = va[i] if i < len(va) else OperatorRow()
            xb = vb[i] if i < len(vb) else OperatorRow()
            table_rows.append([i + 1, xa.operator, xa.percentage, xb.operator, xb.percentage])
        section.add(Table(f"{kind}-operators-compare", ["Rank", "A operator", "A %", "B operator", "B %"],
                          table_rows, ["int", "text", "num2", "text", "num2"]))
    if not any(v["a"] or v["b"] for v in data.values()) and not trace_blocks and not kernel_blocks:
        section.data["available"] = False
    section.data.update(data)
    section.data["traces"] = trace_data or None
    section.data["trace_kernels"] = kernel_data or None
    return section
