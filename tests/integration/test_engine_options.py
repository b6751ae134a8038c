"""``engine.analyze`` takes its options whole (issue #31, item 3): one ``AnalysisOptions``, which the pipeline
builds from its ``SourceOptions``; the fields as keywords still work for a caller that sets one or two."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen import engine, pipeline
from reportgen.engine import AnalysisOptions, analyze
from reportgen.engine.params import parse_overrides

from tests.support.paths import ROOT


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.json"))}


def test_options_whole_and_as_keywords_give_the_same_rule_outputs(tmp_path):
    params = parse_overrides(["StepOutlier.stddev=2"])
    whole = analyze(ROOT / "sample_data", tmp_path / "whole", AnalysisOptions(params=params))
    analyze(ROOT / "sample_data", tmp_path / "loose", params=params)
    assert _files(tmp_path / "whole") == _files(tmp_path / "loose")
    step_outlier = whole.rules["StepOutlier"]
    assert "stddev:2" in step_outlier["RuleParameters"].replace(" ", "")  # the parameter reached the rule
    with pytest.raises(TypeError, match="not both"):
        analyze(ROOT / "sample_data", tmp_path / "both", AnalysisOptions(), scheduler="local:1")
    with pytest.raises(TypeError):
        analyze(ROOT / "sample_data", tmp_path / "typo", schedular="local:1")


def test_the_pipeline_hands_the_engine_one_options_object(tmp_path, monkeypatch):
    seen = []

    def fake(raw_root, out_dir, options=None, **fields):
        seen.append((options, fields))
        raise RuntimeError("stop here")

    monkeypatch.setattr(engine, "analyze", fake)
    params = parse_overrides(["LowGPUUtilization.threshold_p95=80"])
    cache = tmp_path / "cache"
    options = pipeline.SourceOptions(rule_params=params, engine=pipeline.EngineOptions(cache_root=cache))
    with pytest.raises(RuntimeError, match="stop here"):
        pipeline.prepare_rule_outputs(str(ROOT / "sample_data"), tmp_path / "work", options)
    [(given, fields)] = seen
    assert fields == {}
    assert given == AnalysisOptions(params=params, cache_root=cache)
