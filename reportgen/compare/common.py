"""What the comparison sections share: deltas (always B − A), their printed sign, the statistics shown, grouped bars."""

from __future__ import annotations

from reportgen.report import charts
from reportgen.report.util import number

STATS = ("max", "p99", "p95", "p90", "p50", "min")
SHOWN_STATS = ("p50", "p95", "max")


def delta(a, b):
    a, b = number(a), number(b)
    return None if a is None or b is None else b - a


def signed(value, digits: int = 2) -> str | None:
    """A delta as printed: +1.50 / −1.50 / 0.00 (None stays empty)."""
    if value is None:
        return None
    text = f"{abs(value):.{digits}f}"
    if float(text) == 0:
        return text
    return ("+" if value > 0 else "\u2212") + text


def grouped_bars(categories: list[str], series: dict[str, list], title: str, yaxis: str) -> dict:
    traces = [{"type": "bar", "name": charts.safe(name), "x": [charts.safe(c) for c in categories],
               "y": charts._finite(values), "marker": {"color": charts.PALETTE[(1 + 2 * i) % len(charts.PALETTE)]},
               "hovertemplate": "%{x}: %{y:.2f}<extra>" + charts.safe(name) + "</extra>"}
              for i, (name, values) in enumerate(series.items())]
    return {"data": traces, "layout": charts._layout(title, barmode="group", yaxis=charts._axis(yaxis))}
