"""A table cell's data-value is its exact value wherever the text rounds or reformats it; data-sagemaker is the
text SageMaker's report printed, where that differs from what we show (docs/report.md, "Exact values")."""

from __future__ import annotations

from reportgen.compare.common import signed_cell
from reportgen.formatting import cell_parts, exact_number
from reportgen.render.blocks import render_block
from reportgen.report.model import Shown, Table
from tests.support.html_tables import read_sagemaker_tables, read_shown_tables, read_tables


def test_rounded_numbers_keep_their_exact_value():
    assert cell_parts(12.3456, "num2") == ("12.35", "12.3456", None)
    assert cell_parts(12.34, "num2") == ("12.34", None, None)  # the text is the value: no data-value
    assert cell_parts(7, "num2") == ("7.00", None, None)
    assert cell_parts(0.1 + 0.2, "pct") == ("0.30 %", "0.30000000000000004", None)
    assert cell_parts(3.7, "int") == ("3", "3.7", None)
    assert cell_parts(float("nan"), "num2") == ("n/a", None, None)
    assert cell_parts(True, "text") == ("True", None, None)


def test_humane_cells_keep_the_exact_value_and_what_sagemaker_printed():
    assert cell_parts(596310691.3912, "bytes_s") == ("596.3 MB/s", "596310691.3912", None)
    assert cell_parts(1770032, "us") == ("1.77 s", "1770032", "1770032")  # SageMaker printed µs
    assert cell_parts("threshold:20\nwindow:5", "params") == ("threshold: 20, window: 5", None,
                                                             "threshold:20\nwindow:5")
    assert cell_parts(Shown("11.5 %", exact_number(11.528165986513626), "11 %"), "text") == (
        "11.5 %", "11.528165986513626", "11 %")


def test_exact_number_reads_back_as_the_same_float():
    for value in (1700000040.148451, 779.5315577983856, 1e-7, -0.5, 2 ** 60):
        assert float(exact_number(value)) == value
    assert exact_number(float("inf")) is None and exact_number("12") is None and exact_number(None) is None


def test_compare_deltas_keep_the_exact_difference():
    assert signed_cell(None) is None
    assert signed_cell(1.5) == "+1.50"  # printed exactly: no data-value
    cell = signed_cell(-0.123456)
    assert (cell.text, cell.exact) == ("\u22120.12", "-0.123456")


def test_the_html_cell_carries_both_attributes_escaped():
    table = Table("t", ["what", "value"], [["share", Shown("11.5 %", "11.528", "11 % <b>")], ["n", 12.3456]],
                  ["text", "num2"])
    html = render_block(table)
    assert 'data-value="11.528" data-sagemaker="11 % &lt;b&gt;">11.5 %</td>' in html
    assert read_tables(html)["t"][1:] == [["share", "11.528"], ["n", "12.3456"]]
    assert read_sagemaker_tables(html)["t"][1:] == [["share", "11 % <b>"], ["n", "12.35"]]
    assert read_shown_tables(html)["t"][1:] == [["share", "11.5 %"], ["n", "12.35"]]
