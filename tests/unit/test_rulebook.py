"""The rulebook (reportgen/rulebook.py) is the one table of rules: every row resolves to a rule
module and a parameter class, the engine, the report texts and docs/rules.md follow it."""

from __future__ import annotations

import dataclasses
import importlib
import json

from reportgen.engine import params as params_module
from reportgen.engine.rules import rule_module
from reportgen.report import rule_texts
from reportgen.rulebook import BY_NAME, RULE_ORDER, RULES, SUMMARY_RULES, RuleName



def test_the_rule_names_are_the_rulebook_order_and_plain_strings():
    assert list(RuleName) == [rule.name for rule in RULES] and [m.value for m in RuleName] == list(RULE_ORDER)
    assert f"{RuleName.BATCH_SIZE}.json" == str(RuleName.BATCH_SIZE) + ".json" == "BatchSize.json"
    assert json.dumps({RuleName.STEP_OUTLIER: [RuleName.DATALOADER]}) == '{"StepOutlier": ["Dataloader"]}'
    assert {"LoadBalancing": 1}.get(RuleName.LOAD_BALANCING) == 1 and RULE_ORDER[0] == "CPUBottleneck"


def test_every_row_resolves_to_its_module_and_parameter_class():
    assert len(RULES) == len(BY_NAME) == len(RuleName)
    for rule in RULES:
        module = rule_module(rule.name)
        assert module.__name__ == f"reportgen.engine.rules.{rule.module}" and callable(module.evaluate)
        cls = params_module.PARAMS_CLASSES[rule.name]
        assert cls.__name__ == rule.params and issubclass(cls, params_module.RuleParams)
        assert dataclasses.is_dataclass(cls)
        assert rule.lane in ("events", "system")
        if not rule.summary_only:  # every rule in the rules summary has our wording
            assert rule.description and rule.recommendation and rule.symptom, rule.name
    assert tuple(params_module.PARAMS_CLASSES) == RULE_ORDER
    assert SUMMARY_RULES == ("OverallSystemUsage", "OverallFrameworkMetrics")


def test_report_texts_come_from_the_rulebook():
    assert rule_texts.describe("IOBottleneck") == BY_NAME["IOBottleneck"].description
    assert rule_texts.recommend("BatchSize") == BY_NAME["BatchSize"].recommendation
    assert rule_texts.finding("StepOutlier", 2, 3, 10) == (
        f"StepOutlier fired 2 times (3 violations in 10 datapoints): {BY_NAME['StepOutlier'].symptom}.")
    assert rule_texts.describe("NoSuchRule") == "A rule this version of reportgen does not know."
    assert rule_texts.recommend("NoSuchRule") == ""


def test_engine_runs_each_rule_in_its_rulebook_lane(monkeypatch):
    """The two lanes of ``_evaluate`` are the rulebook's: a rule's lane decides its thread."""
    import threading

    import reportgen.engine as engine

    seen = {}
    for rule in RULES:
        module = importlib.import_module(f"reportgen.engine.rules.{rule.module}")
        monkeypatch.setattr(module, "evaluate",
                            lambda data, params, _n=rule.name: seen.setdefault(_n, threading.current_thread().name) and {})
    rules, _ = engine._evaluate(None, None, None, threads=2, timeline=False)
    assert list(rules) == list(RULE_ORDER)
    main = threading.current_thread().name
    assert {n for n, t in seen.items() if t != main} == {r.name for r in RULES if r.lane == "events"}
