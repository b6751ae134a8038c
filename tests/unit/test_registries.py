"""The registries hold every fact of what they register (issue #31, item 4): a rule's ``needs_gpu`` and deep-dive
section on its rulebook row, a cause's title and the causes it reads on its registry row; the schema's lists
are tied to them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from reportgen import rulebook
from reportgen.diagnosis import causes, evaluate_rule
from reportgen.diagnosis.evaluation import NOT_EVALUATED, PASSED
from reportgen.report.sections import SECTION_IDS
from reportgen.section_ids import SectionId


from tests.support.paths import ROOT


def _schema() -> dict:
    return json.loads((ROOT / "reportgen" / "schemas" / "report.schema.json").read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------------------- section ids


def test_section_ids_are_the_report_order_and_plain_strings():
    assert [s.value for s in SectionId] == list(SECTION_IDS)
    assert f"{SectionId.GPU_MEMORY}" == str(SectionId.GPU_MEMORY) == "gpu-memory"
    assert json.dumps({SectionId.COST: [SectionId.DATA_QUALITY]}) == '{"cost": ["data-quality"]}'
    assert {SectionId.BATCH_SIZE: 1}.get("batch-size") == 1


def test_schema_section_names_are_section_ids():
    sections = _schema()["properties"]["sections"]
    listed = set(sections["properties"]) | set(sections["required"])
    assert listed <= {s.value for s in SectionId}
    assert len(listed) == 15  # the sections whose data the schema describes one by one


# ----------------------------------------------------------------------------------------------- rules


def test_every_rule_row_says_whether_it_needs_a_gpu_and_where_its_deep_dive_is():
    gpu = {r.name for r in rulebook.RULES if r.needs_gpu}
    assert gpu == {"LowGPUUtilization", "BatchSize", "GPUMemoryIncrease", "LoadBalancing", "CPUBottleneck",
                   "IOBottleneck"}
    assert rulebook.DEEP_DIVES == {
        "cpu-bottlenecks": "CPUBottleneck", "io-bottlenecks": "IOBottleneck",
        "gpu-utilization-analysis": "LowGPUUtilization", "step-duration-analysis": "StepOutlier",
        "gpu-memory": "GPUMemoryIncrease", "batch-size": "BatchSize", "initialization-time": "MaxInitializationTime",
        "workload-balancing": "LoadBalancing", "dataloading-analysis": "Dataloader"}
    for rule in rulebook.RULES:
        assert rule.section is None or rule.section in SECTION_IDS
        assert (rule.section is None) == rule.summary_only, rule.name  # a summary has no deep dive


def test_a_gpu_rule_on_a_cpu_only_job_is_not_evaluated_from_its_row(monkeypatch):
    state, reason = evaluate_rule("LowGPUUtilization", 0, 500, has_gpu=False)
    assert (state, reason) == (NOT_EVALUATED, "no GPU metrics were recorded, and this rule judges GPU use")
    assert evaluate_rule("MaxInitializationTime", 0, 500, has_gpu=False) == (PASSED, "")
    # the row is what decides: a rule whose row says it needs a GPU is not evaluated, whatever its name
    row = dataclasses.replace(rulebook.BY_NAME["MaxInitializationTime"], needs_gpu=True)
    monkeypatch.setitem(rulebook.BY_NAME, "MaxInitializationTime", row)
    assert evaluate_rule("MaxInitializationTime", 0, 500, has_gpu=False)[0] == NOT_EVALUATED
    assert evaluate_rule("MaxInitializationTime", 0, 500, has_gpu=None) == (PASSED, "")


# ---------------------------------------------------------------------------------------------- causes


def test_schema_cause_enum_is_the_registry():
    enums = []

    def walk(node):
        if isinstance(node, dict):
            if "cause" in node.get("properties", {}):
                enums.append(node["properties"]["cause"].get("enum"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(_schema())
    assert enums and all(e == list(causes.CAUSES) for e in enums), enums
    assert set(causes.CAUSES) == {c.id for c in causes.REGISTRY} == set(causes.DETECTORS)
    assert len(causes.CAUSES) == len(causes.REGISTRY) == len(causes.DETECTORS)  # no cause listed twice


def test_every_cause_has_its_title_and_detector_and_reads_only_earlier_causes():
    order = [cause.id for cause, _ in causes.run_order()]
    assert order == [c.id for c in causes.REGISTRY]
    for cause in causes.REGISTRY:
        assert cause.title and causes.TITLES[cause.id] == cause.title
        assert all(order.index(dep) < order.index(cause.id) for dep in cause.after), cause.id
    assert causes.BY_ID["input-pipeline"].after == ("cpu-bound", "io-bound", "loader-restart")
    assert causes.BY_ID["load-imbalance"].after == ("straggler",)
    assert set(causes.IDLE_GPU_CAUSES) < set(causes.BY_ID["gpu-underused"].after)


def test_a_cause_that_reads_a_later_one_or_has_no_detector_fails(monkeypatch):
    swapped = list(causes.REGISTRY)
    a, b = swapped.index(causes.BY_ID["straggler"]), swapped.index(causes.BY_ID["load-imbalance"])
    swapped[a], swapped[b] = swapped[b], swapped[a]
    monkeypatch.setattr(causes, "REGISTRY", tuple(swapped))
    with pytest.raises(ValueError, match="load-imbalance.*straggler"):
        causes.run_order()
    monkeypatch.setattr(causes, "REGISTRY", (*causes.BY_ID.values(), causes.Cause("planted", "Planted")))
    with pytest.raises(ValueError, match="'planted' has no @detector"):
        causes.run_order()
    with pytest.raises(ValueError, match="not a cause of the registry"):
        causes.detector("not-a-cause")
    with pytest.raises(ValueError, match="registered twice"):
        causes.detector("io-bound")


def test_a_detector_sees_only_the_findings_its_row_names(monkeypatch):
    """What a detector may read is its row's ``after``: the straggler finding reaches load-imbalance, and
    nothing else does."""
    import reportgen.diagnosis as diagnosis
    from reportgen.diagnosis.causes import Finding

    seen: dict[str, list[str]] = {}
    planted = Finding("straggler", 0.3, 30.0, None, ["planted"], "fix")
    order = []
    for cause, detect in diagnosis.RUN_ORDER:
        def spy(ev, found, _cause=cause.id, _detect=detect):
            seen[_cause] = sorted(found)
            return planted if _cause == "straggler" else None
        order.append((cause, spy))
    monkeypatch.setattr(diagnosis, "RUN_ORDER", order)
    from reportgen.rule_outputs import RuleOutput, RuleOutputs

    outputs = RuleOutputs(folder=Path("."))
    outputs.rules = {"LowGPUUtilization": RuleOutput("LowGPUUtilization", 0, 0, {}, 5000, "")}
    result = diagnosis.diagnose(outputs)
    assert set(seen) == set(causes.CAUSES)  # every detector ran
    assert seen["load-imbalance"] == ["straggler"]
    assert seen["step-waste"] == ["straggler"]  # the straggler claims its rank's waiting: one stall, one finding
    assert all(found == [] for cause, found in seen.items() if cause not in ("load-imbalance", "step-waste"))
    assert [f.cause for f in result.findings] == ["straggler"]


def test_each_cause_row_names_the_question_it_answers():
    from reportgen.diagnosis.coverage import QUESTIONS

    assert all(c.question in QUESTIONS for c in causes.REGISTRY)
    assert {c.id: c.question for c in causes.REGISTRY if c.question != "gpu-use"} == {
        "input-pipeline": "input-pipeline", "io-bound": "input-pipeline", "cpu-bound": "input-pipeline",
        "straggler": "step-times", "step-outliers": "step-times", "slow-initialization": "step-times",
        "gpu-memory-growth": "memory", "host-memory-growth": "memory", "memory-leak": "memory",
        "out-of-memory-risk": "memory", **{cause: "step-account" for cause in causes.ACCOUNT_CAUSES},
        "loader-restart": "input-pipeline"}  # read from the account, the input pipeline's question
