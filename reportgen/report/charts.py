"""Plotly figure builders for the report, returning plain figure dicts.

Labels that come from the data are HTML-escaped here, because plotly renders a subset
of HTML in hover labels and legends.
"""

from __future__ import annotations

import html
import math

PALETTE = ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725", "#31688e", "#35b779", "#90d743"]
_LAYOUT = {
    "margin": {"l": 50, "r": 20, "t": 50, "b": 40},
    "height": 340,
    "font": {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 12},
    "paper_bgcolor": "white",
    "plot_bgcolor": "white",
}


def safe(label) -> str:
    return html.escape(str(label), quote=True)


def _layout(title: str, **extra) -> dict:
    layout = dict(_LAYOUT)
    layout["title"] = {"text": safe(title), "font": {"size": 14}}
    layout.update(extra)
    return layout


def _axis(text: str, **extra) -> dict:
    """An axis with a title. plotly.js 3+ (we ship 4.1) ignores a plain-string ``title``: it must be
    ``{"text": ...}``, or the axis shows no title at all."""
    return {"title": {"text": safe(text)}, **extra}


def _finite(values) -> list:
    return [v if isinstance(v, (int, float)) and math.isfinite(v) else None for v in values]


def pie(values: dict, title: str) -> dict:
    labels = [safe(k) for k in values]
    return {
        "data": [{
            "type": "pie",
            "labels": labels,
            "values": _finite(values.values()),
            "marker": {"colors": PALETTE[: len(labels)] if len(labels) <= len(PALETTE) else None},
            "hovertemplate": "%{label}: %{value:.2f} (%{percent})<extra></extra>",
            "textinfo": "percent",
            "sort": False,
        }],
        "layout": _layout(title, showlegend=True, legend={"orientation": "v"}),
    }


def boxes(stats: dict[str, dict], title: str, yaxis: str = "Utilization in %") -> dict:
    """One box per item from precomputed quartiles and whiskers (p25/p50/p75/lower/upper).

    The rules put the whiskers at the Tukey fences (1.5 x IQR), not at the extremes, so a maximum
    beyond the upper fence (``gpu_max`` or ``max`` in the stats) is drawn as an open circle above
    its box: otherwise a 93 % peak over a 34 % whisker would show only in the text."""
    traces = []
    for i, (name, s) in enumerate(stats.items()):
        q1, med, q3 = s.get("p25"), s.get("p50"), s.get("p75")
        if None in (q1, med, q3):
            continue
        color = PALETTE[i % len(PALETTE)]
        upper = s.get("upper", q3)
        traces.append({
            "type": "box",
            "name": safe(name),
            "x": [safe(name)],
            "q1": [q1], "median": [med], "q3": [q3],
            "lowerfence": [s.get("lower", q1)], "upperfence": [upper],
            "marker": {"color": color},
            "hoverinfo": "y+name",
        })
        peak = _finite([s.get("gpu_max", s.get("max"))])[0]
        if peak is not None and isinstance(upper, (int, float)) and peak > upper:
            traces.append({
                "type": "scatter", "mode": "markers",
                "name": safe(name) + " maximum",
                "x": [safe(name)], "y": [peak],
                "marker": {"color": color, "symbol": "circle-open", "size": 10},
                "hovertemplate": "maximum %{y}<extra>" + safe(name) + "</extra>",
            })
    return {"data": traces, "layout": _layout(title, showlegend=False, yaxis=_axis(yaxis))}


def histograms(series: dict[str, tuple[list, list]], title: str, xaxis: str, yaxis: str = "Occurrences") -> dict:
    """Overlaid histograms from precomputed counts and bin edges (one trace per series)."""
    traces = []
    for i, (name, (counts, edges)) in enumerate(series.items()):
        if len(edges) != len(counts) + 1 or not counts:
            continue
        centers = [(edges[j] + edges[j + 1]) / 2 for j in range(len(counts))]
        widths = [edges[j + 1] - edges[j] for j in range(len(counts))]
        traces.append({
            "type": "bar",
            "name": safe(name),
            "x": _finite(centers), "y": list(counts), "width": _finite(widths),
            "opacity": 0.7,
            "marker": {"color": PALETTE[i % len(PALETTE)]},
            "hovertemplate": "%{x:.4g}: %{y}<extra>" + safe(name) + "</extra>",
        })
    return {
        "data": traces,
        "layout": _layout(title, barmode="overlay", bargap=0, xaxis=_axis(xaxis), yaxis=_axis(yaxis)),
    }


def hbar(labels: list, values: list, title: str, xaxis: str) -> dict:
    """Horizontal bars, largest on top (operator rankings)."""
    return {
        "data": [{
            "type": "bar", "orientation": "h",
            "y": [safe(label) for label in labels][::-1], "x": _finite(values)[::-1],
            "marker": {"color": PALETTE[2]},
            "hovertemplate": "%{y}: %{x:.2f}<extra></extra>",
        }],
        "layout": _layout(title, height=max(260, 28 * len(labels) + 90), xaxis=_axis(xaxis),
                          yaxis={"automargin": True}),
    }


def _ms(seconds: list) -> list:
    return [None if v is None else v * 1000.0 for v in seconds]


def time_lines(t: list, series: dict[str, dict], title: str, yaxis: str, band: str | None = None) -> dict:
    """Lines over time (x in epoch ms, date axis); ``band`` names a series drawn with its min-max range."""
    x = _ms(t)
    traces = []
    for i, (name, agg) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        if name == band and agg.get("min") and agg.get("max"):
            traces.append({"type": "scatter", "mode": "lines", "x": x, "y": _finite(agg["max"]),
                           "line": {"width": 0}, "showlegend": False, "hoverinfo": "skip"})
            traces.append({"type": "scatter", "mode": "lines", "x": x, "y": _finite(agg["min"]),
                           "line": {"width": 0}, "fill": "tonexty", "fillcolor": "rgba(33,145,140,0.18)",
                           "name": safe(f"{name} min-max"), "hoverinfo": "skip"})
        traces.append({"type": "scatter", "mode": "lines", "x": x, "y": _finite(agg.get("mean", [])),
                       "name": safe(name), "line": {"color": color, "width": 1.5}})
    return {"data": traces, "layout": _layout(title, xaxis={"type": "date"}, yaxis=_axis(yaxis),
                                              hovermode="x unified", legend={"orientation": "h", "y": -0.2})}


def heatmap(t: list, rows: list, z: list, title: str) -> dict:
    """One row per core / GPU over time, colour = utilization (0-100 %)."""
    return {
        "data": [{"type": "heatmap", "x": _ms(t), "y": [safe(r) for r in rows], "z": [_finite(r) for r in z],
                  "zmin": 0, "zmax": 100, "colorscale": "Viridis", "colorbar": {"title": {"text": "%"}},
                  "hovertemplate": "%{y} %{x}: %{z:.0f} %<extra></extra>"}],
        "layout": _layout(title, xaxis={"type": "date"}, height=max(260, 14 * len(rows) + 120),
                          yaxis={"automargin": True}),
    }


def share_time_axis(figures: list[dict], start_s: float, end_s: float, labels: list[str]) -> None:
    """Give charts stacked on one page the same time axis: the same x range and the same left and
    right margins (instead of margins sized per chart to its own labels and colour bar), so an
    instant sits at the same horizontal position in every chart. ``labels``: every y-axis label of
    the figures; the left margin fits the longest (SVG clips beyond 40 characters)."""
    widest = max((len(str(label)) for label in labels), default=0)
    left = max(60, min(7 * min(widest, 40) + 30, 320))
    for figure in figures:
        layout = figure["layout"]
        layout["xaxis"] = {**layout.get("xaxis", {}), "range": [start_s * 1000.0, end_s * 1000.0]}
        layout["yaxis"] = {**layout.get("yaxis", {}), "automargin": False}
        layout["margin"] = {**layout.get("margin", _LAYOUT["margin"]), "l": left, "r": 80}
        for trace in figure["data"]:
            if trace.get("type") == "heatmap":  # the colour bar sits in the shared right margin
                trace["colorbar"] = {**trace.get("colorbar", {}), "x": 1.01, "xanchor": "left", "thickness": 12}


def intervals(lanes: dict[str, list], title: str) -> dict:
    """Horizontal bars of [start, end] intervals (seconds) per lane, on a date axis."""
    traces = []
    for i, (lane, spans) in enumerate(lanes.items()):
        x, y = [], []
        for start, end in spans:
            x += [start * 1000.0, end * 1000.0, None]
            y += [safe(lane), safe(lane), None]
        traces.append({"type": "scatter", "mode": "lines", "x": x, "y": y, "name": safe(lane),
                       "line": {"width": 12, "color": PALETTE[i % len(PALETTE)]}, "hoverinfo": "x+name"})
    return {"data": traces, "layout": _layout(title, xaxis={"type": "date"}, showlegend=False,
                                              height=max(200, 30 * len(lanes) + 120), yaxis={"automargin": True})}


def grouped_bars(categories: list[str], series: dict[str, list], title: str, yaxis: str) -> dict:
    """Bars of several series side by side per category (the comparison's A vs B charts)."""
    traces = [{"type": "bar", "name": safe(name), "x": [safe(c) for c in categories],
               "y": _finite(values), "marker": {"color": PALETTE[(1 + 2 * i) % len(PALETTE)]},
               "hovertemplate": "%{x}: %{y:.2f}<extra>" + safe(name) + "</extra>"}
              for i, (name, values) in enumerate(series.items())]
    return {"data": traces, "layout": _layout(title, barmode="group", yaxis=_axis(yaxis))}
