"""A time chart's static picture (reportgen.render.static_chart): the figure's own numbers as a small SVG."""

from __future__ import annotations

import re

from reportgen.render.blocks import render_block
from reportgen.report import charts
from reportgen.report.model import Chart
from reportgen.render.static_chart import COLUMNS, LINE_HEIGHT, column_means, line_path, static_picture


def _points(path: str) -> list[list[tuple[int, int]]]:
    """The path's pieces back as absolute (column, y) points (what a browser draws)."""
    pieces = []
    for piece in re.findall(r"M[^M]*", path):
        head = re.match(r"M(\d+) (\d+)(.*)", piece)
        c, y = int(head[1]), int(head[2])
        points = [(c, y)]
        rest = head[3]
        if rest.startswith("l"):
            numbers = [int(n) for n in re.findall(r"-?\d+", rest)]
            for dc, dy in zip(numbers[::2], numbers[1::2]):
                c, y = c + dc, y + dy
                points.append((c, y))
        else:
            assert rest == "h1"
        pieces.append(points)
    return pieces


def test_line_path_draws_each_column_at_its_value_and_breaks_at_gaps():
    columns = [0.0, 50.0, 100.0, None, 25.0, None, None, 75.0, 80.0]
    path = line_path(columns, 0.0, 100.0, height=40)
    assert path == "M0 40l1-20 1-20M4 30h1M7 10l1-2"
    assert _points(path) == [[(0, 40), (1, 20), (2, 0)], [(4, 30)], [(7, 10), (8, 8)]]
    assert line_path([None, None], 0.0, 100.0) == ""
    # values beyond the axis are drawn at its edge, never outside the picture
    assert _points(line_path([-10.0, 200.0], 0.0, 100.0, height=40)) == [[(0, 40), (1, 0)]]


def test_column_means_average_the_points_of_each_column():
    start, end = 0.0, float(COLUMNS)
    x = [0.0, 0.5, 1.2, 5.0, 5.9, 500.0]
    y = [10.0, 20.0, 7.0, 1.0, None, 3.0]
    means = column_means(x, y, start, end)
    assert means[0] == 15.0 and means[1] == 7.0 and means[5] == 1.0
    assert sum(v is not None for v in means) == 3  # the gap (None) and the point past the end are left out


def test_time_lines_picture_holds_the_series_means_in_the_shared_range():
    t = [1_700_000_000.0 + 10.0 * i for i in range(320)]  # 320 buckets -> 2 per column
    cpu = [float(i % 100) for i in range(320)]
    figure = charts.time_lines(t, {"CPU <total>": charts.Line(cpu, cpu, cpu, "cpu")},
                               "CPU of algo-1 & co", "", y_range=[0, 100], tick_suffix=" %")
    charts.share_time_axis([figure], t[0], t[-1] + 10.0, ["x"])
    picture = static_picture(figure)
    assert picture is not None and picture.title == "CPU of algo-1 & co"  # plotly's escaped text, unescaped
    assert (picture.start, picture.end, picture.low, picture.high) == ("22:13:20 UTC", "23:06:40 UTC", "0 %", "100 %")
    assert [line.name for line in picture.lines] == ["CPU <total>"]  # the mean only, not the band's traces
    assert picture.lines[0].color == charts.KIND_COLORS["cpu"]
    (points,) = _points(picture.lines[0].path)
    assert [c for c, _ in points] == list(range(COLUMNS))
    for c, y in points:
        mean = (cpu[2 * c] + cpu[2 * c + 1]) / 2
        assert y == round(LINE_HEIGHT - mean / 100 * LINE_HEIGHT)


def test_intervals_picture_covers_the_columns_of_each_lane():
    lanes = {"algo-1 train": [[0.0, 10.0], [80.0, 160.0]], "algo-1 dataloader": [[10.0, 12.0]]}
    figure = charts.intervals(lanes, "Framework phases over time")
    picture = static_picture(figure)
    assert picture.lanes == ["algo-1 dataloader", "algo-1 train"]  # top to bottom, as plotly draws them
    assert [line.path for line in picture.lines] == ["M0 15h11M80 15h80", "M10 5h3"]


def test_no_picture_for_heatmaps_and_charts_off_the_time_axis():
    t = [1_700_000_000.0 + i for i in range(10)]
    assert static_picture(charts.heatmap(t, ["cpu0"], [[1.0] * 10], "cores")) is None
    assert static_picture(charts.hbar(["a"], [1.0], "ops", "ms")) is None
    assert static_picture(charts.time_lines(t, {"CPU": charts.Line([None] * 10)}, "empty", "")) is None


def test_the_rendered_picture_escapes_every_name():
    t = [1_700_000_000.0 + i for i in range(20)]
    hostile = '<img src=x onerror="alert(1)">'
    figure = charts.time_lines(t, {hostile: charts.Line([1.0] * 20, kind="cpu")}, f"Node {hostile}", "")
    html = render_block(Chart("timeline-x", figure, "note"))
    picture = html[html.index('<div class="chart-static">'):html.index('<script')]
    assert "<img" not in picture and picture.count("&lt;img src=x onerror=&#34;alert(1)&#34;&gt;") == 2  # title, legend
    assert '<svg class="chart-static-plot" viewBox="0 0 160 48" preserveAspectRatio="none" aria-hidden="true">' in picture


def test_the_outlier_steps_are_crossed_on_their_lane():
    lanes = {"w train": [[0.0, 160.0]], "w dataloader": [[0.0, 10.0]]}
    figure = charts.intervals(lanes, "Framework phases over time")
    figure["data"].append({"type": "scatter", "mode": "markers", "x": [50_000.0, 999_999.0], "y": ["w train", "w train"],
                           "name": "outlier steps", "marker": {"symbol": "x", "color": "#b91c1c"}})
    figure["layout"]["xaxis"]["range"] = [0.0, 160_000.0]  # ms: one column a second
    picture = static_picture(figure)
    assert [line.name for line in picture.lines] == ["w train", "w dataloader", "outlier steps"]
    # the bottom lane (the first, as plotly draws it) is centred at y 15; the mark past the axis's end is left out
    assert picture.lines[2].path == "M49 11l2 8m0-8l-2 8" and picture.lines[2].color == "#b91c1c"
