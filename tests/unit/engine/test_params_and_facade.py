"""Parameters (defaults, overrides, config files), the analyze() facade, output schema, real fixtures."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from reportgen.engine import analyze, load_config, parse_overrides
from reportgen.engine.params import default_params
from reportgen.errors import InputError
from reportgen.rulebook import RULE_ORDER
from tests.support.paths import SHARED_FIXTURES as FIXTURES, need as need_fixture
from tests.unit.readers.test_readers import instant, write_sys, write_trace, HEAD

REAL_JOB = FIXTURES / "real" / "callmesora-b2fb5951" / "profiler-reports"


@pytest.mark.fixtures
def test_default_rule_parameters_match_the_real_container_output():
    need_fixture(REAL_JOB)
    for name, p in default_params().items():
        real = json.loads((REAL_JOB / f"{name}.json").read_text())
        if name == "LoadBalancing":  # the one calibrated default (docs/deviations.md #15): 0.4, not 0.2
            assert p.threshold == 0.4
            p = replace(p, threshold=0.2)
        assert p.rule_parameters() == real["RuleParameters"], name


def test_parse_overrides_and_errors():
    ps = parse_overrides(["LowGPUUtilization.threshold_p95=80", "lowgpuutilization.window=100",
                          "StepOutlier.mode=Step:ModeKeys.TRAIN", "LoadBalancing.threshold=0.5"])
    assert ps["LowGPUUtilization"].threshold_p95 == 80 and ps["LowGPUUtilization"].window == 100
    assert ps["LowGPUUtilization"].rule_parameters() == "threshold_p95:80\nthreshold_p5:10\nwindow:100\npatience:1000"
    assert ps["StepOutlier"].mode == "Step:ModeKeys.TRAIN" and ps["LoadBalancing"].threshold == 0.5
    for bad, word in [("NoSuchRule.x=1", "NoSuchRule"), ("BatchSize.nope=1", "BatchSize.nope"),
                      ("BatchSize.window=abc", "BatchSize.window"), ("BatchSize.window=2.5", "BatchSize.window"),
                      ("CPUBottleneck.threshold=150", "CPUBottleneck.threshold"), ("BatchSize", "BatchSize"),
                      # a line break in a value forged another RuleParameters line (issue #30)
                      ("StepOutlier.mode=x\nstddev:999", "StepOutlier.mode"),
                      ("StepOutlier.mode=TRAIN\rstddev:999", "StepOutlier.mode"),
                      ("StepOutlier.mode=\x1b]0;pwned\x07", "StepOutlier.mode"),
                      ("StepOutlier.mode=TRAIN\u2028n_outliers:0", "StepOutlier.mode")]:
        with pytest.raises(InputError) as e:
            parse_overrides([bad])
        assert word in str(e.value) and "\n" not in str(e.value)


def test_load_config_toml_and_yaml(tmp_path):
    (tmp_path / "r.toml").write_text("[rules.CPUBottleneck]\nthreshold = 30\n[rules.StepOutlier]\nstddev = 2.5\n")
    ps = load_config(tmp_path / "r.toml")
    assert ps["CPUBottleneck"].threshold == 30 and ps["StepOutlier"].stddev == 2.5
    (tmp_path / "r.yaml").write_text("GPUMemoryIncrease:\n  increase: 10\n")
    assert load_config(tmp_path / "r.yaml")["GPUMemoryIncrease"].increase == 10
    (tmp_path / "bad.yaml").write_text("GPUMemoryIncrease:\n  bogus: 10\n")
    with pytest.raises(InputError, match="GPUMemoryIncrease.bogus"):
        load_config(tmp_path / "bad.yaml")
    (tmp_path / "forged.toml").write_text('[StepOutlier]\nmode = "TRAIN\\nstddev:999"\n')
    with pytest.raises(InputError, match="StepOutlier.mode: no line break") as err:
        load_config(tmp_path / "forged.toml")
    assert "\n" not in str(err.value) and "TRAIN\\x0astddev:999" in str(err.value)


def _raw(tmp_path: Path) -> Path:
    root = tmp_path / "raw"
    for m in range(3):
        lines = [l for k in range(120) for l in instant(1_700_000_040 + 60 * m + 0.5 * k, cpu=95.0, gpu=2.0)]
        write_sys(root, 1_700_000_040 + 60 * m, lines)
    ev = HEAD + [{"name": "Step:ModeKeys.TRAIN", "pid": 1, "ph": "X", "ts": 40_000_000 + i * 100_000, "dur": 50_000,
                  "args": {"pid": 9, "step_num": str(i)}} for i in range(1200)]
    write_trace(root, "1700000160000000_9-algo-1_pythontimeline.json", ev)
    return root


def test_analyze_writes_all_outputs(tmp_path):
    root = _raw(tmp_path)
    res = analyze(root, tmp_path / "out")
    files = sorted(p.name for p in (tmp_path / "out" / "profiler-reports").iterdir())
    assert files == sorted(f"{r}.json" for r in RULE_ORDER)
    for name in RULE_ORDER:
        text = (tmp_path / "out" / "profiler-reports" / f"{name}.json").read_text()
        doc = json.loads(text)
        assert list(doc) == ["RuleTriggered", "Violations", "Details", "Datapoints", "RuleParameters"]
        assert text == json.dumps(res.rules[name])
    cpu = res.rules["CPUBottleneck"]
    assert (cpu["Datapoints"], cpu["Violations"]) == (360, 360)
    assert res.rules["MaxInitializationTime"]["Details"]["step_num"]["first"] == 1_700_000_040_000_000
    assert res.rules["StepOutlier"]["Datapoints"] == 1200
    dq = json.loads(res.data_quality_path.read_text())
    assert dq["total"] == 0
    tl = json.loads(res.timeline_path.read_text())
    n1 = tl["nodes"]["algo-1"]
    assert len(n1["t"]) <= 600 and n1["series"]["cpu_total"]["max"][0] == 71.25
    assert n1["cpu_heatmap"]["rows"] == ["cpu0", "cpu1"]
    assert tl["phases"]["algo-1-9"]["train"][0][0] == 1_700_000_040.0


def test_no_usable_data_is_an_input_error(tmp_path):
    (tmp_path / "system").mkdir()
    with pytest.raises(InputError, match="no usable profiler data"):
        analyze(tmp_path, tmp_path / "out")


def _shape(x):
    if isinstance(x, dict):
        return {k: _shape(v) for k, v in x.items()}
    if isinstance(x, list):
        return "list"
    return "number" if isinstance(x, (int, float)) and not isinstance(x, bool) else type(x).__name__


@pytest.mark.fixtures
def test_output_schema_matches_real_rule_outputs(tmp_path):
    need_fixture(REAL_JOB)
    res = analyze(_raw(tmp_path), tmp_path / "out")
    for name in RULE_ORDER:
        real = json.loads((REAL_JOB / f"{name}.json").read_text())
        ours = res.rules[name]
        assert list(ours) == list(real)
        for key in ("RuleTriggered", "Violations", "Datapoints"):
            assert isinstance(ours[key], int)
        assert isinstance(ours["RuleParameters"], str)
    real_usage = json.loads((REAL_JOB / "OverallSystemUsage.json").read_text())["Details"]
    ours_usage = res.rules["OverallSystemUsage"]["Details"]
    assert list(ours_usage) == list(real_usage)
    assert set(ours_usage["CPU"]["algo-1"]) == set(real_usage["CPU"]["algo-1"]) | {"p90"}
    real_mit = json.loads((REAL_JOB / "MaxInitializationTime.json").read_text())["Details"]
    assert _shape(res.rules["MaxInitializationTime"]["Details"]) == _shape(real_mit)
    real_so = json.loads((REAL_JOB / "StepOutlier.json").read_text())["Details"]["step_details"]["algo-1-27"]
    ours_so = res.rules["StepOutlier"]["Details"]["step_details"]["algo-1-9"]
    # Our one extension of SageMaker's StepOutlier schema: the outlier steps themselves (docs/engine.md).
    assert set(ours_so) - set(real_so) == {"outliers"}
    assert isinstance(ours_so["outliers"], list)
    assert _shape({k: v for k, v in ours_so.items() if k != "outliers"}) == _shape(real_so)
    real_ofm = json.loads((REAL_JOB / "OverallFrameworkMetrics.json").read_text())["Details"]
    assert set(res.rules["OverallFrameworkMetrics"]["Details"]) <= set(real_ofm) | {"forward_backward", "horovod"}


@pytest.mark.fixtures
@pytest.mark.parametrize("name", ["smdebug-sysmetrics", "smdebug-tf-timeline", "smdebug-horovod-timeline",
                                  "smdebug-tf-model-timeline-2", "smdebug-tf-profiler-trace"])
def test_real_smdebug_raw_fixtures_load(tmp_path, name):
    root = need_fixture(FIXTURES / "raw" / name)
    res = analyze(root, tmp_path / "out")
    assert list(res.rules) == list(RULE_ORDER)
    if name == "smdebug-sysmetrics":
        assert res.nodes == ["algo-1"]
        assert res.rules["OverallSystemUsage"]["Datapoints"] == 2
        assert len(res.rules["OverallSystemUsage"]["Details"]["CPU"]["algo-1"]) == 6
    if name == "smdebug-tf-timeline":
        assert res.rules["MaxInitializationTime"]["Datapoints"] == 40
        assert set(res.rules["OverallFrameworkMetrics"]["Details"]["phase"]) == {
            "Step:ModeKeys.TRAIN", "Step:ModeKeys.EVAL", "others"}
    if name == "smdebug-horovod-timeline":
        assert res.n_events == 21 and "horovod" in res.rules["OverallFrameworkMetrics"]["Details"]
    if name == "smdebug-tf-profiler-trace":
        assert res.rules["OverallFrameworkMetrics"]["Details"]["ratio"] == {"/host:CPU": 100.0}
