"""Utilization percentiles of A and B, over all nodes and per node."""

from __future__ import annotations

from dataclasses import dataclass

from reportgen.compare.common import SHOWN_STATS, STATS, delta, signed_cell
from reportgen.compare.side import Side
from reportgen.report.charts import grouped_bars
from reportgen.formatting import exact_number, human_rate
from reportgen.report.model import Chart, Heading, Section, Shown, Table, Text
from reportgen.report.util import number
from reportgen.report.views import UsageRow, usage_rows_of
from reportgen.section_ids import SectionId


def _usage_index(side: Side) -> dict[tuple[str, str], UsageRow]:
    return {(r.metric, r.node): r for r in usage_rows_of(side.data(SectionId.SYSTEM_USAGE_STATISTICS))}


@dataclass(frozen=True)
class OverallUsage(UsageRow):
    """One metric over all of a run's nodes (``overall_usage``): a usage row of no node (its unit, each statistic,
    None where no node has it as a number) and how many nodes list it."""

    nodes: int = 1


def _value(row: UsageRow | OverallUsage | None, key: str):
    """A statistic or the unit of a node's row or of an overall entry (``overall_usage``), None when absent."""
    return None if row is None else getattr(row, key)


def overall_usage(index: dict[tuple[str, str], UsageRow]) -> dict[str, OverallUsage]:
    """Per metric over all nodes: max of the maxima, min of the minima, mean of the per-node percentiles.

    With one node this is that node's row. (The rule outputs carry per-node percentiles only, so a
    true all-nodes percentile cannot be computed; the mean is labelled as such.)
    """
    by_metric: dict[str, list[UsageRow]] = {}
    for (metric, _node), row in index.items():
        by_metric.setdefault(metric, []).append(row)
    result = {}
    for metric, rows in by_metric.items():
        stats = {}
        for key in STATS:
            values = [number(r.stat(key)) for r in rows if number(r.stat(key)) is not None]
            if not values:
                continue
            stats[key] = max(values) if key == "max" else min(values) if key == "min" else sum(values) / len(values)
        result[metric] = OverallUsage(metric=metric, unit=rows[0].unit, nodes=len(rows), **stats)
    return result


def overall_of(side: Side) -> dict[str, OverallUsage]:
    """A run's usage per metric over all its nodes, from its system usage section (``overall_usage``)."""
    return overall_usage(_usage_index(side))


def _usage_rows(keys, ia: dict, ib: dict, with_node: bool) -> tuple[list, list]:
    rows, data = [], []
    for key in keys:
        ra, rb = ia.get(key), ib.get(key)
        metric = key[0] if with_node else key
        unit = _value(ra, "unit") or _value(rb, "unit")
        cells = [metric] + ([key[1]] if with_node else []) + [unit]
        entry = {"metric": metric, "unit": unit, "a": {}, "b": {}, "delta": {}}
        if with_node:
            entry["node"] = key[1]
        for stat in STATS:
            entry["a"][stat], entry["b"][stat] = number(_value(ra, stat)), number(_value(rb, stat))
            entry["delta"][stat] = delta(_value(ra, stat), _value(rb, stat))
        for stat in SHOWN_STATS:
            cells += [entry["a"][stat], entry["b"][stat], signed_cell(entry["delta"][stat])]
        if unit == "bytes":  # network throughput in humane units, as in generate; the exact bytes/s in data-value
            cells = cells[:-3 * len(SHOWN_STATS) - 1] + ["bytes/s"] + [
                _rate(entry[side][stat], signed=side == "delta") for stat in SHOWN_STATS
                for side in ("a", "b", "delta")]
        rows.append(cells)
        data.append(entry)
    return rows, data


def _rate(value, signed: bool = False):
    """Bytes per second shown as "596.3 MB/s" (a delta with its sign), the exact number kept."""
    if value is None:
        return None
    sign = ("+" if value > 0 else "\u2212" if value < 0 else "") if signed else ""
    return Shown(sign + human_rate(abs(value) if signed else value), exact_number(value))


def build(a: Side, b: Side) -> Section:
    section = Section("utilization", "Utilization: overall and per node")
    ia, ib = _usage_index(a), _usage_index(b)
    for side, index in ((a, ia), (b, ib)):
        if not index:
            section.add(Text(f"{side.label} has no system metrics (OverallSystemUsage output missing or empty).",
                             tone="missing"))
    oa, ob = overall_usage(ia), overall_usage(ib)
    for metric in ("GPU", "GPU memory"):
        for side, other, own in ((a, ob, oa), (b, oa, ob)):
            if metric in other and own and metric not in own:
                section.add(Text(f"{side.label} has no {metric} data (a CPU-only instance, or {metric} metrics "
                                 f"were not recorded): {metric} cannot be compared.", tone="missing"))
    stat_columns = [f"{s} {x}" for x in SHOWN_STATS for s in ("A", "B", "Δ")]
    fmts = ["num2"] * len(stat_columns)
    metrics = list(dict.fromkeys(list(oa) + list(ob)))
    overall_rows, overall_data = _usage_rows(metrics, oa, ob, with_node=False)
    node_keys = list(dict.fromkeys(list(ia) + list(ib)))
    node_rows, node_data = _usage_rows(node_keys, ia, ib, with_node=True)
    if overall_rows:
        multi = max([o.nodes for o in list(oa.values()) + list(ob.values())] or [1]) > 1
        section.add(Text("Percentiles of each metric, A and B side by side, with the change Δ = B − A "
                         "(utilization in percentage points; network in bytes per second, shown in KB/s, MB/s or GB/s)."
                         + (" Over all nodes: the highest maximum, the mean of the per-node percentiles and the "
                            "lowest minimum." if multi else "")))
        section.add(Heading("All nodes", 4))
        section.add(Table("utilization-overall", ["Metric", "Unit", *stat_columns], overall_rows,
                          ["text", "text", *fmts], row_header=True))
        p95 = [m for m in metrics if all(o[m].unit == "percentage" for o in (oa, ob) if m in o)]
        section.add(Chart("utilization-p95-chart",
                          grouped_bars(p95, {f"A: {a.name}": [_value(oa.get(m), "p95") for m in p95],
                                              f"B: {b.name}": [_value(ob.get(m), "p95") for m in p95]},
                                        "95th percentile of utilization, A vs B (%)", "%"),
                          "Bar chart (needs JavaScript); the same numbers are in the table above."))
        section.add(Heading("Per node", 4))
        section.add(Table("utilization-nodes", ["Metric", "Node", "Unit", *stat_columns], node_rows,
                          ["text", "text", "text", *fmts], row_header=True))
    else:
        section.data["available"] = False
    section.data.update({"overall": overall_data, "nodes": node_data})
    return section
