"""Helpers shared by the rule modules."""

from __future__ import annotations

import numpy as np

from reportgen.engine.model import AnalysisData


def result(triggered: int, violations: int, details: dict, datapoints: int, params) -> dict:
    """The rule JSON with the original key order."""
    return {
        "RuleTriggered": int(triggered),
        "Violations": int(violations),
        "Details": details,
        "Datapoints": int(datapoints),
        "RuleParameters": params.rule_parameters(),
    }


def series(data: AnalysisData, dimension: str):
    """Yield ``(node, name, values, windows)`` for every series with ``dimension``: the non-NaN
    samples in time order and the window index of each."""
    for node, ns in data.nodes.items():
        names, mat = ns.select(dimension)
        if not names:
            continue
        win = data.window_of_s(ns.tick_ts)
        for j, name in enumerate(names):
            col = mat[:, j]
            ok = ~np.isnan(col)
            yield node, name, col[ok], win[ok]


def text_match(col, pred) -> np.ndarray:
    """Boolean mask ``pred(str(value))`` over a text column of the event table. On a categorical
    column ``pred`` runs once per category (missing values give False) instead of once per event."""
    import pandas as pd

    if isinstance(col.dtype, pd.CategoricalDtype):
        # the categories as a numpy object array: iterating pandas 3's string Index itself costs ~2.6 µs a
        # value (thousands of step numbers)
        cats = col.cat.categories.to_numpy(dtype=object)
        lut = np.array([bool(pred(str(c))) for c in cats] + [False], dtype=bool)
        return lut[col.cat.codes.to_numpy()]  # code -1 (missing) -> the trailing False
    return np.array([bool(pred(str(x))) for x in col.to_numpy()], dtype=bool)
