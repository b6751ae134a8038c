"""The top CPU and GPU operators of A and B, rank by rank (and the PyTorch traces' CPU operators)."""

from __future__ import annotations

from reportgen.compare import traces
from reportgen.compare.side import Side
from reportgen.report.model import Heading, Section, Table, Text

TOP_OPERATORS = 10


def build(a: Side, b: Side) -> Section:
    section = Section("operators", "Top operators")
    data = {}
    trace_blocks, trace_data = traces.operators_blocks(a.traces(), b.traces())
    kernel_blocks, kernel_data = traces.kernels_blocks(a.traces(), b.traces())
    for kind in ("cpu", "gpu"):
        sid = f"{kind}-operators-overview"
        ra = (a.data(sid).get("rows") or [])[:TOP_OPERATORS]
        rb = (b.data(sid).get("rows") or [])[:TOP_OPERATORS]
        section.add(Heading(f"{kind.upper()} operators", 4))
        data[kind] = {"a": ra, "b": rb}
        for side, rows in ((a, ra), (b, rb)):
            if not rows and kind == "cpu" and (side.traces() or {}).get("op_ms_per_step"):
                section.add(Text(f"{side.label} has no SageMaker Debugger CPU operator data; its PyTorch profiler "
                                 "traces' CPU operators are compared below.", tone="note"))
            elif not rows and kind == "gpu" and (side.traces() or {}).get("gpu"):
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
        for i in range(max(len(ra), len(rb))):
            xa = ra[i] if i < len(ra) else {}
            xb = rb[i] if i < len(rb) else {}
            table_rows.append([i + 1, xa.get("operator"), xa.get("percentage"), xb.get("operator"),
                               xb.get("percentage")])
        section.add(Table(f"{kind}-operators-compare", ["Rank", "A operator", "A %", "B operator", "B %"],
                          table_rows, ["int", "text", "num2", "text", "num2"]))
    if not any(v["a"] or v["b"] for v in data.values()) and not trace_blocks and not kernel_blocks:
        section.data["available"] = False
    section.data.update(data)
    section.data["traces"] = trace_data or None
    section.data["trace_kernels"] = kernel_data or None
    return section
