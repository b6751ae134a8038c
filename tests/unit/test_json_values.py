"""The JSON-value guards every room applies (reportgen/json_values.py): what counts as a number, an object, a
list, text, and the report's names for them (report/util.py)."""

from reportgen.json_values import as_items, as_object, finite, given, is_finite, is_plain_number, text
from reportgen.report.util import as_dict, as_list, number

ODD = [True, float("nan"), float("inf"), -float("inf"), 10**400, "3", None, [1], {"a": 1}]


def test_a_number_is_kept_as_given_and_nothing_else_is_one():
    assert given(3) == 3 and isinstance(given(3), int) and given(2.5) == 2.5 and given(-10**300) == -10**300
    assert [given(v) for v in ODD] == [None] * len(ODD)
    assert finite(3) == 3.0 and isinstance(finite(3), float) and [finite(v) for v in ODD] == [None] * len(ODD)
    assert is_finite(0) and not is_finite(True) and not is_finite(10**400)
    assert is_plain_number(float("nan")) and is_plain_number(10**400) and not is_plain_number(False)


def test_objects_lists_and_text():
    assert as_object({"a": 1}) == {"a": 1} and as_object([("a", 1)]) == {} and as_object(None) == {}
    assert as_items([1]) == [1] and as_items((1,)) == [] and as_items("ab") == []
    assert text("x") == "x" and text(5) is None and text(b"x") is None


def test_the_reports_names_are_the_same_guards():
    assert as_dict is as_object and as_list is as_items
    assert number(4) == 4.0 and number("4", 0.0) == 0.0 and number(10**400, -1) == -1 and number(None) is None
