"""A time chart's static picture: the same series as a small SVG, for a page read without JavaScript.

The plotly charts need scripts; a CI artifact viewer or a mail client that blocks them would show only each
chart's one-line note. The charts on the page's time axis (``charts.TIME_LINK``: lines over the job's wall
clock, the framework phases) get this picture instead, drawn here from the figure's own numbers: each line's
bucket means averaged into at most ``COLUMNS`` columns (a path of small relative moves: about 4 bytes a column),
each interval lane as the columns it covers. The page's chart loader removes it once the plotly chart is drawn.
Heatmaps (one row per core) have none: their picture would weigh what the chart does; their note stays.

Only geometry is computed here (numbers); names and colours go to the template, which escapes them."""

from __future__ import annotations

import html
import math
import time
from dataclasses import dataclass

from reportgen.formatting import human_rate
from reportgen.report.charts import TIME_LINK, decode_array, x_values

COLUMNS = 160      # the picture's width in columns: a line's points are averaged into at most this many
LINE_HEIGHT = 48   # a line picture's height in viewBox units (drawn 72 px tall)
LANE_HEIGHT = 10   # one lane of an interval picture


@dataclass
class StaticLine:
    """One path of the picture: its ``d`` attribute, colour and legend name (``width``: stroke in px)."""

    name: str
    color: str
    path: str
    width: float = 1.5


@dataclass
class StaticPicture:
    """What the template draws: the title, the viewBox, the paths, the axis words (start, end, the y range),
    the lanes' names (an interval picture)."""

    title: str
    width: int
    height: int
    lines: list[StaticLine]
    start: str
    end: str
    low: str
    high: str
    lanes: list[str]


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _range(figure: dict, xs: list[list]) -> tuple[float, float] | None:
    """The figure's time range (epoch ms): its axis range where set (the page's shared one), else the data's."""
    axis = (figure.get("layout") or {}).get("xaxis") or {}
    span = axis.get("range")
    if isinstance(span, list) and len(span) == 2 and all(_finite(v) for v in span) and span[1] > span[0]:
        return float(span[0]), float(span[1])
    values = [v for x in xs for v in x if _finite(v)]
    if not values or max(values) <= min(values):
        return None
    return min(values), max(values)


def _column(x: float, start: float, end: float) -> int:
    return min(COLUMNS - 1, max(0, int((x - start) / (end - start) * COLUMNS)))


def column_means(x: list, y: list, start: float, end: float) -> list[float | None]:
    """The values ``y`` at instants ``x`` averaged per column of [start, end]; None where a column has none.
    A value outside the range is left out (the page's axis does not show it either)."""
    sums = [0.0] * COLUMNS
    counts = [0] * COLUMNS
    for xv, yv in zip(x, y):
        if _finite(xv) and _finite(yv) and start <= xv <= end:
            c = _column(xv, start, end)
            sums[c] += yv
            counts[c] += 1
    return [s / n if n else None for s, n in zip(sums, counts)]


def line_path(columns: list[float | None], low: float, high: float, height: int = LINE_HEIGHT) -> str:
    """An SVG path through the columns' values (x = the column, y = 0 at ``high``, ``height`` at ``low``):
    each unbroken piece absolute at its start, then relative moves (the letter once); a gap (None) ends a
    piece, and a piece of one column is a short dash."""
    scale = height / (high - low) if high > low else 0.0
    pieces: list[list[tuple[int, int]]] = []
    for c, value in enumerate(columns):
        if value is None:
            if pieces and pieces[-1]:
                pieces.append([])
            continue
        y = min(height, max(0, round(height - (value - low) * scale)))
        if not pieces:
            pieces.append([])
        pieces[-1].append((c, y))
    out = []
    for piece in (p for p in pieces if p):
        (c0, y0), rest = piece[0], piece[1:]
        moves = " ".join(f"{c - pc} {y - py}" for (pc, py), (c, y) in zip(piece, rest)).replace(" -", "-")
        out.append(f"M{c0} {y0}" + (f"l{moves}" if rest else "h1"))
    return "".join(out)


def _text(label) -> str:
    """A label as the data said it: the figures hold it HTML-escaped for plotly; the template escapes it again."""
    return html.unescape(str(label))


def _title(figure: dict) -> str:
    return _text(((figure.get("layout") or {}).get("title") or {}).get("text", ""))


def _clock(ms: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(ms / 1000.0)) + " UTC"


def _lines_picture(figure: dict, start: float, end: float) -> StaticPicture | None:
    """Each named line of a ``charts.time_lines`` figure (its bucket means; the bands are left out)."""
    named = [t for t in figure["data"] if t.get("name") and t.get("hoverinfo") != "skip"]
    series = [(t, x_values(t), decode_array(t.get("y") or [])) for t in named]
    axis = (figure.get("layout") or {}).get("yaxis") or {}
    span = axis.get("range")
    if isinstance(span, list) and len(span) == 2 and all(_finite(v) for v in span) and span[1] > span[0]:
        low, high = float(span[0]), float(span[1])
    else:
        values = [v for _, _, y in series for v in y if _finite(v)]
        low, high = 0.0, max(values, default=0.0)
    lines = []
    for trace, x, y in series:
        path = line_path(column_means(x, y, start, end), low, high)
        if path:
            lines.append(StaticLine(_text(trace["name"]), (trace.get("line") or {}).get("color", "#555555"), path))
    if not lines:
        return None
    suffix = axis.get("ticksuffix", "")
    return StaticPicture(_title(figure), COLUMNS, LINE_HEIGHT, lines, _clock(start), _clock(end),
                         _level(low, suffix), _level(high, suffix), [])


def _level(value: float, suffix: str) -> str:
    """An axis end in people's units: bytes/s as "548.0 MB/s", a percentage as "100 %"."""
    return human_rate(value) if suffix == "B/s" else f"{value:.3g}{suffix}"


def _lanes_picture(figure: dict, start: float, end: float) -> StaticPicture | None:
    """Each lane of a ``charts.intervals`` figure as the columns its intervals cover, one lane above another in
    plotly's order (its category axis puts the first lane at the bottom)."""
    traces = [t for t in figure["data"] if t.get("x") and t.get("mode") == "lines"]  # not the outlier markers
    lines, lanes = [], []
    for index, trace in enumerate(traces):
        x = trace["x"]
        covered = [False] * COLUMNS
        for i in range(0, len(x) - 1, 3):  # [start, end, None] per interval
            a, b = x[i], x[i + 1]
            if _finite(a) and _finite(b) and b >= start and a <= end:
                for c in range(_column(max(a, start), start, end), _column(min(b, end), start, end) + 1):
                    covered[c] = True
        y = (len(traces) - 1 - index) * LANE_HEIGHT + LANE_HEIGHT // 2  # the first lane at the bottom, as plotly
        runs, c = [], 0
        while c < COLUMNS:
            if covered[c]:
                first = c
                while c < COLUMNS and covered[c]:
                    c += 1
                runs.append(f"M{first} {y}h{c - first}")
            c += 1
        lanes.append(_text(trace.get("name", "")))
        if runs:
            lines.append(StaticLine(lanes[-1], (trace.get("line") or {}).get("color", "#555555"),
                                    "".join(runs), width=9))
    if not lines:
        return None
    rows = {str(t["y"][0]): len(traces) - 1 - i for i, t in enumerate(traces) if t.get("y")}
    for trace in figure["data"]:
        if trace.get("mode") == "markers":  # the outlier steps: a small x on their lane, as the chart marks them
            marks = "".join(_cross(_column(x, start, end), rows[str(lane)] * LANE_HEIGHT + LANE_HEIGHT // 2)
                            for x, lane in zip(trace.get("x") or [], trace.get("y") or [])
                            if _finite(x) and start <= x <= end and str(lane) in rows)
            if marks:
                lines.append(StaticLine(_text(trace.get("name", "")),
                                        (trace.get("marker") or {}).get("color", "#b91c1c"), marks, width=1.5))
    return StaticPicture(_title(figure), COLUMNS, LANE_HEIGHT * len(traces), lines, _clock(start), _clock(end), "", "",
                         lanes[::-1])


def _cross(column: int, y: int) -> str:
    """An x two columns wide and most of a lane high, centred on (column, y)."""
    return f"M{column - 1} {y - 4}l2 8m0-8l-2 8"


def static_picture(figure: dict) -> StaticPicture | None:
    """The static picture of a chart on the page's time axis (lines or interval lanes); None for any other
    chart, a heatmap, or one with nothing to draw."""
    if not isinstance(figure, dict) or not figure.get(TIME_LINK):
        return None
    data = [t for t in figure.get("data") or [] if isinstance(t, dict)]
    if not data or any(t.get("type") != "scatter" for t in data):
        return None
    figure = {**figure, "data": data}
    is_lanes = any(isinstance(t.get("y"), list) and any(isinstance(v, str) for v in t["y"]) for t in data)
    xs = [x_values(t) for t in data]
    span = _range(figure, xs)
    if span is None:
        return None
    return _lanes_picture(figure, *span) if is_lanes else _lines_picture(figure, *span)
