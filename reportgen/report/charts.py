"""Plotly figure builders for the report, returning plain figure dicts.

Labels that come from the data are HTML-escaped here, because plotly renders a subset
of HTML in hover labels and legends.
"""

from __future__ import annotations

import array
import base64
import html
import sys
import math
from dataclasses import dataclass, field, replace

# Okabe & Ito's qualitative palette: distinguishable with the common colour-vision deficiencies
# (viridis shades were nearly identical in one chart).
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#555555"]
# One colour per kind of series, the same in every chart of the report.
KIND_COLORS = {
    "cpu": "#0072B2", "cpu_memory": "#009E73", "io_wait": "#D55E00",
    "gpu": "#E69F00", "gpu_memory": "#CC79A7", "gpu_memory_used": "#D55E00",
    "network": "#56B4E9", "network_platform": "#555555",
    "train": "#0072B2", "eval": "#E69F00", "dataloader": "#009E73",
}
# The key a chart spec carries to join the page's linked time axis (see templates/reportgen/charts.js).
TIME_LINK = "linkedTimeAxis"
UTC_HOVER = "%Y-%m-%d %H:%M:%S UTC"  # plotly draws epoch-ms instants in UTC; the hover says so
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


def _rgba(color: str, alpha: float) -> str:
    return f"rgba({int(color[1:3], 16)},{int(color[3:5], 16)},{int(color[5:7], 16)},{alpha})"


def pie(values: dict, title: str) -> dict:
    """A pie whose slices are labelled with one decimal (a slice too thin for its label has none;
    the hover and the legend still name it)."""
    labels = [safe(k) for k in values]
    return {
        "data": [{
            "type": "pie",
            "labels": labels,
            "values": _finite(values.values()),
            "marker": {"colors": [PALETTE[i % len(PALETTE)] for i in range(len(labels))]},
            "hovertemplate": "%{label}: %{percent:.1%}<extra></extra>",
            "texttemplate": "%{percent:.1%}",
            "textposition": "inside",
            "insidetextorientation": "horizontal",
            "sort": False,
        }],
        "layout": _layout(title, height=280, showlegend=True, legend={"orientation": "v", "traceorder": "normal"},
                          uniformtext={"minsize": 10, "mode": "hide"},
                          margin={"l": 20, "r": 20, "t": 50, "b": 20}),
    }


def share_bar(shares: dict, title: str, colors: dict | None = None) -> dict:
    """Shares of one whole (percent values) as one 100 % horizontal bar, segments in the given order
    and labelled with one decimal - the same rounding the tables use. Takes a tenth of a pie's height
    and keeps its labels legible at any width."""
    traces = []
    for i, (name, value) in enumerate(shares.items()):
        color = (colors or {}).get(name, PALETTE[i % len(PALETTE)])
        v = _finite([value])[0]
        traces.append({
            "type": "bar", "orientation": "h", "name": safe(name), "y": [""], "x": [v],
            "marker": {"color": color}, "text": [f"{v:.1f} %" if v is not None else ""],
            "textposition": "inside", "insidetextanchor": "middle", "textangle": 0,
            "hovertemplate": safe(name) + ": %{x:.1f} %<extra></extra>",
        })
    return {"data": traces, "layout": _layout(
        title, height=150, barmode="stack", showlegend=True,
        legend={"orientation": "h", "y": -0.25, "traceorder": "normal"},
        uniformtext={"minsize": 10, "mode": "hide"},
        xaxis={"range": [0, 100], "ticksuffix": " %", "fixedrange": True}, yaxis={"visible": False, "fixedrange": True},
        margin={"l": 20, "r": 20, "t": 40, "b": 20})}


# Statistics the texts cite below a box (``boxes`` marks them): key in the rule output -> label.
LOW_MARKS = (("gpu_5", "5th percentile"), ("p05", "5th percentile"), ("p5", "5th percentile"),
             ("gpu_min", "minimum"), ("min", "minimum"))


def share_bars(rows: dict[str, dict], title: str) -> dict:
    """Several breakdowns of the same categories (e.g. the whole job, the outlier steps, the
    bottleneck moments) as 100 % bars, one row each, so they compare at a glance in one chart.
    A category keeps its colour and legend place in every row; segments are labelled with one
    decimal."""
    categories = list(dict.fromkeys(k for shares in rows.values() for k in shares))
    labels = [safe(r) for r in rows][::-1]  # the first row on top
    traces = []
    for i, category in enumerate(categories):
        values = _finite([shares.get(category) for shares in rows.values()])[::-1]
        traces.append({
            "type": "bar", "orientation": "h", "name": safe(category), "y": labels, "x": values,
            "marker": {"color": PALETTE[i % len(PALETTE)]},
            "text": [f"{v:.1f} %" if v is not None else "" for v in values],
            "textposition": "inside", "insidetextanchor": "middle", "textangle": 0,
            "hovertemplate": "%{y}: " + safe(category) + " %{x:.1f} %<extra></extra>",
        })
    # The legend: one entry a line at the chart's bottom, below the axis's labels, in the room its lines need.
    # Entries side by side (half the width each) ran a long name into the next at 800 px, and plotly wraps
    # a horizontal legend at the plot's width, narrow beside long row names: one a line there anyway.
    lines = len(categories)
    return {"data": traces, "layout": _layout(
        title, height=96 + 28 * len(rows) + 20 * lines, barmode="stack", showlegend=True,
        legend={"orientation": "h", "xref": "container", "x": 0, "yref": "container", "y": 0, "yanchor": "bottom",
                "traceorder": "normal", "font": {"size": 11}},
        uniformtext={"minsize": 10, "mode": "hide"},
        xaxis={"range": [0, 100], "ticksuffix": " %", "fixedrange": True},
        yaxis={"automargin": True, "fixedrange": True},
        margin={"l": 20, "r": 20, "t": 40, "b": 30 + 20 * lines})}


def boxes(stats: dict[str, dict], title: str, yaxis: str = "Utilization in %") -> dict:
    """One box per item from precomputed quartiles and whiskers (p25/p50/p75/lower/upper).

    The rules put the whiskers at the Tukey fences (1.5 x IQR), not at the extremes, so the values
    the texts cite beyond them are marked: the maximum (``gpu_max``/``max``) as an open circle, the
    5th percentile and the minimum as open triangles. A percentage axis starts at 0, so a text
    saying "5th percentile 0 %" is never contradicted by an axis that starts at 25."""
    traces = []
    top = 100.0
    for i, (name, s) in enumerate(stats.items()):
        q1, med, q3 = s.get("p25"), s.get("p50"), s.get("p75")
        if None in (q1, med, q3):
            continue
        color = PALETTE[i % len(PALETTE)]
        upper, lower = s.get("upper", q3), s.get("lower", q1)
        traces.append({
            "type": "box",
            "name": safe(name),
            "x": [safe(name)],
            "q1": [q1], "median": [med], "q3": [q3],
            "lowerfence": [lower], "upperfence": [upper],
            "marker": {"color": color},
            "hoverinfo": "y+name",
        })
        peak = _finite([s.get("gpu_max", s.get("max"))])[0]
        if peak is not None and isinstance(upper, (int, float)) and peak > upper:
            top = max(top, peak)
            traces.append({
                "type": "scatter", "mode": "markers",
                "name": safe(name) + " maximum",
                "x": [safe(name)], "y": [peak],
                "marker": {"color": color, "symbol": "circle-open", "size": 10},
                "hovertemplate": "maximum %{y}<extra>" + safe(name) + "</extra>",
            })
        seen = set()
        for key, label in LOW_MARKS:
            value = _finite([s.get(key)])[0]
            if value is None or label in seen:
                continue
            seen.add(label)
            if isinstance(lower, (int, float)) and value >= lower:
                continue  # inside the whisker: the box already shows it
            traces.append({
                "type": "scatter", "mode": "markers", "name": safe(f"{name} {label}"),
                "x": [safe(name)], "y": [value],
                "marker": {"color": color, "size": 10,
                           "symbol": "triangle-down-open" if label == "minimum" else "triangle-up-open"},
                "hovertemplate": f"{label} %{{y}}<extra>{safe(name)}</extra>",
            })
    percent = "%" in yaxis
    axis = _axis(yaxis, range=[0, top * 1.05], rangemode="tozero") if percent else _axis(yaxis, rangemode="tozero")
    return {"data": traces, "layout": _layout(title, height=215, showlegend=False, yaxis=axis,
                                              margin={"l": 50, "r": 20, "t": 40, "b": 30})}


def clip_edge(counts: list, edges: list, keep: float = 0.99) -> float | None:
    """Where to end a histogram's x axis so its bulk is visible: the right edge of the bin that
    reaches ``keep`` of all counts, when that leaves more than half the axis empty; else None."""
    total = sum(c for c in counts if isinstance(c, (int, float)) and math.isfinite(c) and c > 0)
    if not total or len(edges) != len(counts) + 1:
        return None
    running = 0.0
    for j, c in enumerate(counts):
        running += c if isinstance(c, (int, float)) and math.isfinite(c) and c > 0 else 0.0
        if running >= keep * total:
            edge = edges[j + 1]
            span = edges[-1] - edges[0]
            return edge if span > 0 and (edge - edges[0]) < 0.5 * span else None
    return None


# How far (as a share of one bin) a histogram's bin centre may sit from the even grid that replaces its
# centres and widths: float noise only (the rules' bins are even: numpy's linspace), nothing the hover's
# four digits could show.
EVEN_BINS = 1e-6


def histograms(series: dict[str, tuple[list, list]], title: str, xaxis: str, yaxis: str = "Occurrences",
               clip_at: float | None = None, log_y: bool = False) -> dict:
    """Overlaid histograms from precomputed counts and bin edges (one trace per series). ``clip_at``
    ends the x axis there (the section says what lies beyond); ``log_y`` shows rare bins next to
    common ones. Even bins travel as ``x0``/``dx`` and one width (a 16-node job's step histogram:
    100 bins x 16 nodes of 17-digit centres and widths, 65 KB, was a third of its rule outputs' charts)."""
    traces = []
    for i, (name, (counts, edges)) in enumerate(series.items()):
        if len(edges) != len(counts) + 1 or not counts:
            continue
        centers = [(edges[j] + edges[j + 1]) / 2 for j in range(len(counts))]
        widths = [edges[j + 1] - edges[j] for j in range(len(counts))]
        grid = regular_grid(centers, EVEN_BINS)
        if grid and any(abs(w - grid[1]) > EVEN_BINS * grid[1] for w in widths):
            grid = None  # centres evenly spaced, widths not: bins that do not touch
        traces.append({
            "type": "bar",
            "name": safe(name),
            **({"x0": grid[0], "dx": grid[1], "width": grid[1]} if grid else
               {"x": _finite(centers), "width": _finite(widths)}),
            "y": list(counts),
            "opacity": 0.7,
            "marker": {"color": PALETTE[i % len(PALETTE)]},
            "hovertemplate": "%{x:.4g}: %{y}<extra>" + safe(name) + "</extra>",
        })
    x = _axis(xaxis)
    if clip_at is not None:
        low = min((e[0] for _, e in series.values() if e), default=0.0)
        x["range"] = [low, clip_at]
    y = _axis(yaxis, type="log") if log_y else _axis(yaxis)
    figure = {
        "data": traces,
        "layout": _layout(title, height=240, barmode="overlay", bargap=0, xaxis=x, yaxis=y,
                          legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1.0, "xanchor": "right",
                                  "traceorder": "normal", "font": {"size": 11}},
                          margin={"l": 50, "r": 20, "t": 40, "b": 40}),
    }
    figure["layout"]["title"].update(x=0.0, xanchor="left")  # the legend sits at the top right
    return figure


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


# How far (as a share of one step) an instant may sit from the regular grid that replaces it: the
# timeline rounds its bucket starts to the millisecond, a bucket lasts a second or more.
GRID_TOLERANCE = 0.02


def regular_grid(x: list, tolerance: float = GRID_TOLERANCE) -> tuple[float, float] | None:
    """(first, step) when the instants ``x`` (epoch ms) lie on one regular grid with no point missing,
    as a bucketed time series' do; else None. Such a trace carries ``x0``/``dx`` (two numbers) instead
    of one 13-digit instant per point in each of its traces (two thirds of a long job's chart data)."""
    n = len(x)
    if n < 3 or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in x):
        return None
    step = (x[-1] - x[0]) / (n - 1)
    if not step > 0:
        return None
    off = tolerance * step
    if any(abs(v - (x[0] + i * step)) > off for i, v in enumerate(x)):
        return None
    return x[0], step


def _x_of(x: list, grid: tuple[float, float] | None) -> dict:
    return {"x0": grid[0], "dx": grid[1]} if grid else {"x": x}


def x_values(trace: dict) -> list:
    """A trace's x values, rebuilt from ``x0``/``dx`` where the trace carries those instead."""
    if "x" in trace:
        return trace["x"]
    if "x0" not in trace:
        return []
    z = trace.get("z")
    if isinstance(z, dict):
        n = int(str(z.get("shape", "0,0")).split(",")[1])
    else:
        n = len(z[0]) if z else len(decode_array(trace.get("y") or []))
    return [trace["x0"] + i * trace.get("dx", 1) for i in range(n)]


# Unsigned typed arrays for a line's values held as whole multiples of 10**-decimals: (code, bytes, largest).
_FIXED = (("u1", "B", 1, 255), ("u2", "H", 2, 65535))
FIXED_DECIMALS = (0, 1, 2)


def fixed_decimals(cells: list, most: int = 2) -> int | None:
    """The fewest decimals (up to ``most``) that hold every one of the values exactly - a value is a whole
    number of hundredths when it equals ``round(v, 2)`` - or None. The engine rounds utilization to two
    decimals, so its series are such values; a mean of several of them usually is not."""
    for d in FIXED_DECIMALS:
        if d > most:
            break
        if all(round(v, d) == v for v in cells):
            return d
    return None


def float_array(values: list) -> list | dict:
    """A line's values as plotly.js's typed-array form (``{"dtype", "bdata": base64}``) when every value is
    a number and there are enough to pay for the wrapper; else the list with gaps (None) kept.

    Non-negative values with at most two decimals that fit (utilization in percent, rounded by the engine
    to two decimals) travel exactly, as whole hundredths (tenths, units) in ``u2`` or ``u1`` with a
    ``"decimals"`` key: 2.7 characters a value, or 1.3. The page's chart loader (charts.js) divides them
    back (``q / 10**decimals``: the same double as the JSON number), before plotly sees them. Anything else
    is float32 (``f4``: 5.3 characters a value, 7 significant digits, more than the hover's 3)."""
    cells = _finite(values)
    if len(cells) < 8 or any(v is None for v in cells) or any(abs(v) > 3e38 for v in cells):
        return cells
    decimals = fixed_decimals(cells) if min(cells) >= 0 else None
    if decimals is not None:
        scaled = [int(round(v * 10 ** decimals)) for v in cells]
        for dtype, code, _, top in _FIXED:
            if max(scaled) <= top:
                spec = {"dtype": dtype, "bdata": _b64(array.array(code, scaled))}
                return {**spec, "decimals": decimals} if decimals else spec
    return {"dtype": "f4", "bdata": _b64(array.array("f", cells))}


def _b64(values: array.array) -> str:
    """Little-endian, as plotly.js decodes typed arrays."""
    if sys.byteorder == "big":
        values.byteswap()
    return base64.b64encode(values.tobytes()).decode("ascii")


def decode_array(spec) -> list:
    """The numbers of a typed-array spec (``float_array``, ``percent_matrix``) as a flat list, divided by
    10**decimals where the spec says so (as charts.js does); a list is returned as it is. For tests and for
    code that reads figures back."""
    if not isinstance(spec, dict):
        return spec
    values = array.array({"f4": "f", "u1": "B", "u2": "H"}[spec["dtype"]], base64.b64decode(spec["bdata"]))
    if sys.byteorder == "big":
        values.byteswap()
    decimals = spec.get("decimals", 0)
    return [v / 10 ** decimals for v in values] if decimals else values.tolist()


def for_plotly(figure: dict) -> dict:
    """The figure as plotly itself reads it (Jupyter's renderer, ``plotly.graph_objects``): whole hundredths
    (``"decimals"``, which only the page's chart loader divides back) as plain lists of numbers; other typed
    arrays, which plotly decodes, as they are. The figure given is not changed."""
    def plain(trace):
        fixed = [k for k in ("x", "y", "z") if isinstance(trace.get(k), dict) and trace[k].get("decimals")]
        return {**trace, **{k: decode_array(trace[k]) for k in fixed}} if fixed else trace

    return {**figure, "data": [plain(t) if isinstance(t, dict) else t for t in figure.get("data") or []]}


def percent_matrix(rows: list[list]) -> list | dict:
    """A heatmap's 0-100 % cells, rounded to whole percents (its hover shows none, its colour scale
    cannot show a tenth): as plotly.js's typed-array form (``{"dtype": "u1", "bdata": base64,
    "shape": "rows,cols"}``, 1.33 characters a cell instead of about 5) when every cell is a number
    in 0-100 and the rows are equally long; else as lists with gaps (None) kept."""
    cells = [[v if isinstance(v, (int, float)) and math.isfinite(v) else None for v in row] for row in rows]
    width = len(cells[0]) if cells else 0
    if width and all(len(r) == width and all(v is not None and 0 <= v <= 100 for v in r) for r in cells):
        data = array.array("B", (int(round(v)) for r in cells for v in r))
        return {"dtype": "u1", "bdata": _b64(data), "shape": f"{len(cells)},{width}"}
    return [[None if v is None else int(round(v)) for v in r] for r in cells]


def link_time_axis(figure: dict) -> dict:
    """Join the page's linked time axis: zooming or panning any such chart moves all of them (and
    "Reset time range" restores them). Every chart whose x axis is the job's wall clock uses it."""
    figure[TIME_LINK] = True
    return figure


@dataclass(frozen=True)
class Line:
    """One series of ``time_lines``: a value per time bucket (``mean``, gaps None) and, where the line is a
    mean per bucket, each bucket's ``min`` and ``max`` (a band); ``kind`` picks its colour."""

    mean: list = field(default_factory=list)
    min: list = field(default_factory=list)
    max: list = field(default_factory=list)
    kind: str = ""


def merge_buckets(agg: Line, k: int) -> Line:
    """A bucketed series' runs of ``k`` consecutive buckets as one: the lowest minimum, the highest maximum
    (exact: a one-sample spike keeps its height) and the mean of the means (the merged buckets last equally
    long, so this is their samples' mean wherever they hold as many samples: a regular sampling), rounded to
    the decimals the means have (two for utilization: 0.005 points at most). Gaps (None) are skipped; a run
    with none of its values is a gap."""
    def runs(values):
        cells = _finite(values or [])
        return [[v for v in cells[i:i + k] if v is not None] for i in range(0, len(cells), k)]

    means = _finite(agg.mean)
    decimals = fixed_decimals([v for v in means if v is not None])
    mean = [None if not r else (sum(r) / len(r) if decimals is None else round(sum(r) / len(r), decimals))
            for r in runs(means)]
    return replace(agg, mean=mean, min=[min(r) if r else None for r in runs(agg.min)] if agg.min else agg.min,
                   max=[max(r) if r else None for r in runs(agg.max)] if agg.max else agg.max)


def time_lines(t: list, series: dict[str, Line], title: str, yaxis: str, height: int = 240,
               y_range: list | None = None, tick_suffix: str = "", merge: int = 1) -> dict:
    """Lines over time (x in epoch ms, date axis), one per series, in the order given (also the
    legend's order). A series is a ``Line`` (mean, min, max, kind): its
    colour comes from its kind (the same in every chart) and, where min and max are given (the
    line is a mean per time bucket), a translucent band shows the bucket's full range. ``merge``:
    buckets on a regular grid are merged that many at a time (``merge_buckets``: the page's budget
    of points shared by many nodes); a point sits at the start of its first bucket, as a bucket's does."""
    x = _ms(t)
    grid = regular_grid(x)
    if grid and merge > 1 and len(x) > merge:
        series = {name: merge_buckets(agg, merge) for name, agg in series.items()}
        grid = (grid[0], grid[1] * merge)
    traces = []
    for i, (name, agg) in enumerate(series.items()):
        color = KIND_COLORS.get(agg.kind, PALETTE[i % len(PALETTE)])
        label = safe(name)
        if agg.min and agg.max:
            traces.append({"type": "scatter", "mode": "lines", **_x_of(x, grid), "y": float_array(agg.max),
                           "line": {"width": 0, "color": color}, "showlegend": False, "hoverinfo": "skip",
                           "legendgroup": label})
            traces.append({"type": "scatter", "mode": "lines", **_x_of(x, grid), "y": float_array(agg.min),
                           "line": {"width": 0, "color": color}, "fill": "tonexty",
                           "fillcolor": _rgba(color, 0.16), "showlegend": False, "hoverinfo": "skip",
                           "legendgroup": label})
        traces.append({"type": "scatter", "mode": "lines", **_x_of(x, grid), "y": float_array(agg.mean),
                       "name": label, "legendgroup": label, "line": {"color": color, "width": 1.6},
                       "hovertemplate": "%{y:.3s}" + safe(tick_suffix) + "<extra>" + label + "</extra>"})
    y = _axis(yaxis, range=y_range) if y_range else _axis(yaxis, rangemode="tozero")
    if tick_suffix:
        y["ticksuffix"] = tick_suffix
    figure = {"data": traces, "layout": _layout(
        title, height=height, xaxis={"type": "date", "hoverformat": UTC_HOVER, "tickformat": "%H:%M"}, yaxis=y,
        hovermode="x unified",
        hoverlabel={"namelength": -1},
        legend={"orientation": "h", "y": -0.16, "yanchor": "top", "x": 0, "xanchor": "left",
                "traceorder": "normal", "font": {"size": 11}},
        # room for a legend of three lines below the axis, so every panel keeps the same plot height
        margin={"l": 50, "r": 20, "t": 32, "b": 86})}
    return link_time_axis(figure)


# A heatmap's columns at most: it is drawn two to a row (~400 px of plot at the page's widest), one row
# per core, so a 96-core node's 600 buckets would be 58,000 cells where 19,200 fill the pixels.
HEATMAP_COLUMNS = 200


def merge_columns(rows: list[list], k: int) -> list[list]:
    """Each run of ``k`` consecutive cells of a row as one: the mean of its numbers (None where it has none).
    The buckets merged have the same length, so this is their samples' mean wherever they hold as many
    samples (a regular sampling: all but a node's first and last bucket, or one with samples missing)."""
    out = []
    for row in rows:
        cells = _finite(row)
        merged = []
        for start in range(0, len(cells), k):
            values = [v for v in cells[start:start + k] if v is not None]
            merged.append(sum(values) / len(values) if values else None)
        out.append(merged)
    return out


def heatmap(t: list, rows: list, z: list, title: str, columns: int = HEATMAP_COLUMNS) -> dict:
    """One row per core / GPU over time, colour = utilization (0-100 %), in whole percents; buckets on
    a regular grid are merged k at a time (``merge_columns``) so at most ``columns`` remain."""
    x = _ms(t)
    grid = regular_grid(x)
    if grid and len(x) > columns:
        k = math.ceil(len(x) / columns)
        z = merge_columns(z, k)
        grid = (grid[0] + (k - 1) / 2 * grid[1], grid[1] * k)  # a merged cell spans its k buckets' cells
    return {
        "data": [{"type": "heatmap", **_x_of(x, grid), "y": [safe(r) for r in rows], "z": percent_matrix(z),
                  "zmin": 0, "zmax": 100, "colorscale": "Viridis", "colorbar": {"title": {"text": "%"}},
                  "hovertemplate": "%{y} %{x}: %{z:.0f} %<extra></extra>"}],
        TIME_LINK: True,
        "layout": _layout(title, xaxis={"type": "date", "hoverformat": UTC_HOVER, "tickformat": "%H:%M"},
                          height=max(160, 16 * len(rows) + 90),
                          yaxis={"automargin": True}, margin={"l": 50, "r": 20, "t": 36, "b": 30}),
    }


def share_time_axis(figures: list[dict], start_s: float, end_s: float, labels: list[str]) -> None:
    """Give charts of one page the same time axis: the same x range, and - for charts laid out in
    the same grid column - the same left and right margins (instead of margins sized per chart to
    its own labels and colour bar), so an instant sits at the same horizontal position. ``labels``:
    every y-axis label of the figures; the left margin fits the longest (SVG clips beyond 40
    characters). A heatmap keeps room on the right for its colour bar."""
    widest = max((len(str(label)) for label in labels), default=0)
    left = max(48, min(7 * min(widest, 40) + 30, 320))
    right = 80 if any(t.get("type") == "heatmap" for f in figures for t in f["data"]) else 16
    for figure in figures:
        layout = figure["layout"]
        layout["xaxis"] = {**layout.get("xaxis", {}), "range": [start_s * 1000.0, end_s * 1000.0]}
        layout["yaxis"] = {**layout.get("yaxis", {}), "automargin": False}
        layout["margin"] = {**layout.get("margin", _LAYOUT["margin"]), "l": left, "r": right}
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
                       "line": {"width": 12, "color": KIND_COLORS.get(lane.rsplit(" ", 1)[-1],
                                                                      PALETTE[i % len(PALETTE)])},
                       "hoverinfo": "x+name", "hoverlabel": {"namelength": -1}})
    return link_time_axis({"data": traces, "layout": _layout(
        title, xaxis={"type": "date", "hoverformat": UTC_HOVER}, showlegend=False, height=max(170, 24 * len(lanes) + 90),
        yaxis={"automargin": True}, margin={"l": 50, "r": 20, "t": 40, "b": 30})})


def grouped_bars(categories: list[str], series: dict[str, list], title: str, yaxis: str) -> dict:
    """Bars of several series side by side per category (the comparison's A vs B charts)."""
    traces = [{"type": "bar", "name": safe(name), "x": [safe(c) for c in categories],
               "y": _finite(values), "marker": {"color": PALETTE[(1 + 2 * i) % len(PALETTE)]},
               "hovertemplate": "%{x}: %{y:.2f}<extra>" + safe(name) + "</extra>"}
              for i, (name, values) in enumerate(series.items())]
    return {"data": traces, "layout": _layout(title, barmode="group", yaxis=_axis(yaxis))}


def steps_lines(x: list, series: dict[str, list], title: str, xaxis: str, yaxis: str, height: int = 220) -> dict:
    """Step-shaped lines on a plain numeric x axis (not the job's clock), one per series: a value that holds
    until the next x (the queue length over one profiler step)."""
    traces = [{"type": "scatter", "mode": "lines", "line": {"shape": "hv", "width": 1.6,
                                                            "color": PALETTE[i % len(PALETTE)]},
               "name": safe(name), "x": _finite(x), "y": _finite(values),
               "hovertemplate": "%{x:.2f}: %{y}<extra>" + safe(name) + "</extra>"}
              for i, (name, values) in enumerate(series.items())]
    return {"data": traces, "layout": _layout(title, height=height, xaxis=_axis(xaxis),
                                              yaxis=_axis(yaxis, rangemode="tozero"))}
