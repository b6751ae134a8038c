"""The ProfilerReport rules: one module each, ``evaluate(data, params) -> dict`` (SageMaker schema).

Which module computes which rule is in the rulebook (``reportgen.rulebook``).
"""

from __future__ import annotations

import importlib

from reportgen.rulebook import BY_NAME


def rule_module(name: str):
    return importlib.import_module(f"reportgen.engine.rules.{BY_NAME[name].module}")
