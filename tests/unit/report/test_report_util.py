"""The report's guards for values read from JSON the user may have written."""

from __future__ import annotations

import math

import pytest

from reportgen.report.util import number


@pytest.mark.parametrize("value, expected", [(3, 3.0), (2.5, 2.5), (-0.0, 0.0), (10**300, 1e300), (True, None),
                                             (10**400, None), (-(10**400), None), (math.nan, None), (math.inf, None),
                                             ("1", None), (None, None)])
def test_number_is_a_finite_float_or_the_default(value, expected):
    assert number(value) == expected
    assert number(value, 7.0) == (7.0 if expected is None else expected)
