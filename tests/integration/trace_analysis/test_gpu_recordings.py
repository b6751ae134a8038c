"""A real torch.profiler trace with a planted GPU cause, recorded on an NVIDIA H100 (torch 2.11, CUDA 13) by
tests/recordings/gpu-host-sync/record.py (scenario ``host-sync``: a bf16 MLP reading one activation statistic with
``.item()`` per layer, 21 a step beside ``loss.item()``, with some Python after each). truth.json keeps torch's
own ``prof.key_averages()`` counts from that run; the analysis must agree with them and the diagnosis must
name the planted cause. (The other scenarios, recorded in the same run, gave: healthy -> healthy,
kernel-launch-bound / no-mixed-precision / pageable-memcpy -> that cause alone; docs/beyond-sagemaker.md.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportgen.diagnosis import diagnose
from reportgen.trace_analysis import analyze_job
from reportgen.rule_outputs import RuleOutputs
from tests.support.paths import RECORDINGS, ROOT

HERE = RECORDINGS / "gpu-host-sync" / "h100-host-sync"


@pytest.fixture(scope="module")
def recording():
    truth = json.loads((HERE / "truth.json").read_text())
    doc, problems = analyze_job(sorted(HERE.glob("*.pt.trace.json.gz")))
    assert problems.total == 0
    return doc, {row["name"]: row for row in truth["key_averages"]}, truth


def test_sync_counts_agree_with_torch_key_averages(recording):
    doc, torch_rows, truth = recording
    rank = next(iter(doc["ranks"].values()))
    sync = rank["gpu_analysis"]["sync"]
    assert len(rank["steps"]) == truth["steps"] == 4
    assert sync["by_call"]["cudaStreamSynchronize"] == torch_rows["cudaStreamSynchronize"]["count"] == 88
    assert sync["sync_operators"]["aten::item"] == torch_rows["aten::item"]["count"] == 88
    assert sync["by_operator"]["aten::item > aten::_local_scalar_dense"] == 88
    # host time blocked in the syncs: torch's self CPU time of cudaStreamSynchronize (+ the profiler's final
    # cudaDeviceSynchronize), to the µs
    assert sync["blocked_ms"] * 1000 == pytest.approx(torch_rows["cudaStreamSynchronize"]["self_cpu_us"]
                                                      + torch_rows["cudaDeviceSynchronize"]["self_cpu_us"], abs=0.01)
    assert sync["per_step"] == 22.0


def test_the_planted_cause_is_found(recording):
    doc, _, _ = recording
    made = RuleOutputs(folder=Path("."))
    made.rules, made.timeline, made.traces = {}, None, doc
    diagnosis = diagnose(made)
    assert diagnosis.status == "problems"
    assert [f.cause for f in diagnosis.findings] == ["host-sync"]
    finding = diagnosis.findings[0]
    assert 0.15 < finding.share < 0.35 and finding.metrics["per_step_ms"] > 5
    assert any("aten::item > aten::_local_scalar_dense: 22 per step" in e for e in finding.evidence)


def test_report_json_carries_the_analyses_and_the_finding(tmp_path):
    """The whole path: ``generate`` on the recording; report.json valid against its schema, with the per-rank
    ``comm_comp_overlap_pct`` slot, the sync counts and the host-sync finding; the page shows the new tables."""
    import jsonschema

    from reportgen.cli import main

    out = tmp_path / "report.html"
    assert main(["generate", str(HERE), "-o", str(out), "-q"]) == 0
    report = json.loads(out.with_suffix(".json").read_text())
    schema = json.loads((ROOT / "reportgen" / "schemas" / "report.schema.json").read_text())
    jsonschema.validate(report, schema)
    rank = next(iter(report["sections"]["gpu-kernels-operators"]["ranks"].values()))
    assert "comm_comp_overlap_pct" in rank["gpu_analysis"]["overlap"]  # None: no communication on one GPU
    assert rank["gpu_analysis"]["sync"]["calls"] == 89
    assert [f["cause"] for f in report["diagnosis"]["findings"]] == ["host-sync"]
    page = out.read_text()
    for table in ("kineto-step-breakdown-", "kineto-launch-", "kineto-kernel-durations-", "kineto-memcpy-bandwidth-"):
        assert table in page
