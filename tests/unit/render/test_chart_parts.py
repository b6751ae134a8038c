"""The page's chart specs share their repeated attributes (render.chart_parts, issue 32): listed once, put
back whole; the drawing of such a page is tested in tests/e2e/test_report_in_browser.py (every report)."""

from __future__ import annotations

import json
import re

from reportgen.render import chart_parts
from reportgen.render.blocks import script_json

ANCHOR = chart_parts.ANCHOR


def _node_chart(node: str) -> dict:
    band = {"type": "scatter", "mode": "lines", "line": {"width": 0, "color": "#0072B2"}, "showlegend": False,
            "hoverinfo": "skip", "legendgroup": "CPU </script><b>x</b>"}
    return {"data": [{**band, "x0": 1.0, "dx": 2.0, "y": {"dtype": "u2", "bdata": node * 4, "decimals": 2}},
                     {**band, "x0": 1.0, "dx": 2.0, "y": [1, 2, 3], "name": f"mean of {node}"}],
            "layout": {"title": {"text": f"CPU of {node}"}, "height": 240, "margin": {"l": 79, "r": 16, "t": 32},
                       "xaxis": {"type": "date", "range": [0, 10]}},
            "linkedTimeAxis": True}


def _page(figures: list[dict]) -> str:
    charts = "".join(f'<figure class="chart" id="c{i}"><script type="application/json" class="chart-spec">'
                     f'{script_json(f)}</script></figure>\n' for i, f in enumerate(figures))
    return f"<html><body>{charts}{ANCHOR}packed</script><script>charts.js $parts</script></body></html>"


def test_repeated_attributes_are_listed_once_and_put_back_whole():
    figures = [_node_chart(f"algo-{i}") for i in range(1, 5)]
    page = _page(figures)
    shared = chart_parts.share(page)
    assert len(shared) < len(page) - 3 * 150
    # the list sits before the packed plotly.js, once; every spec gets its attributes back, unchanged
    assert shared.count('id="chart-parts"') == 1 and shared.index('id="chart-parts"') < shared.index(ANCHOR)
    assert chart_parts.page_specs(shared) == figures
    specs = [json.loads(t) for t in re.findall(r'class="chart-spec">(.*?)</script>', shared)]
    first = specs[0]
    # what differs between the charts stays in each spec: the values and the title
    assert first["data"][0]["y"] == figures[0]["data"][0]["y"] and "line" not in first["data"][0]
    assert first["layout"]["title"] == {"text": "CPU of algo-1"} and "xaxis" not in first["layout"]
    assert first["data"][1]["name"] == "mean of algo-1" and "$parts" in first["data"][1]
    # a string from the data cannot end the list's <script> element
    parts = re.search(r'id="chart-parts">(.*?)</script>', shared).group(1)
    assert "<" not in parts and ">" not in parts and "\\u003c/script\\u003e" in parts


def test_a_page_it_cannot_help_is_left_as_it_is():
    one = _page([_node_chart("algo-1")])
    assert chart_parts.share(one) == one  # one chart: nothing repeats
    two = _page([_node_chart("algo-1"), _node_chart("algo-2")])
    assert chart_parts.share(two.replace(ANCHOR, "<script>")) == two.replace(ANCHOR, "<script>")  # no plotly.js
    odd = _page([{"data": [{"name": "$parts"}], "layout": {}}, _node_chart("algo-2"), _node_chart("algo-3")])
    assert chart_parts.share(odd) == odd  # a spec already holding the key
    broken = two.replace('"height":240', '"height":', 1)
    assert chart_parts.share(broken) == broken  # a spec that does not parse
