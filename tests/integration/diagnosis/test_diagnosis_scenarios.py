"""Done-when of the diagnosis: the synthetic generator plants each situation, the engine analyses the raw
data, and the planted cause is findings[0] (status as planted). 15-minute jobs, 1-2 nodes × 8 cores × 2 GPUs."""

from __future__ import annotations

import pytest

from reportgen.diagnosis import diagnose
from reportgen.engine import analyze
from reportgen.rule_outputs import load_rule_outputs
from testdata.synthetic import Scenario, generate

BASE = dict(nodes=1, cores=8, gpus=2, duration_s=900, interval_ms=500, seed=1)
SCENARIOS = {
    # GPUs busy ~90 %, six workers, nothing planted
    "healthy": ({}, Scenario(gpu_util_busy=(90,), gpu_idle_fraction=(0.03,), dataloader_workers=6)),
    # half the samples: one core saturated while the GPUs idle; one DataLoader worker, no pinned memory
    "input-pipeline": ({}, Scenario(cpu_bottleneck_fraction=0.5, dataloader_workers=1, pin_memory=False)),
    # no core saturated: the GPUs idle in 55 % of the samples between busy bursts, 2 workers on 16 cores
    "input-pipeline-workers": ({"cores": 16}, Scenario(gpu_idle_fraction=(0.55,), dataloader_workers=2)),
    # GPUs at 25 %, GPU memory 15 %, cores at 20 %: batch too small for the instance
    "gpu-underused": ({}, Scenario(gpu_util_busy=(25,), gpu_idle_fraction=(0.03,), cpu_util=20,
                                   gpu_memory_base=15, dataloader_workers=6)),
    # the same with 2 workers on 16 cores: a steadily low GPU is still the batch, not the loaders
    "gpu-underused-few-workers": ({"cores": 16}, Scenario(gpu_util_busy=(25,), gpu_idle_fraction=(0.03,), cpu_util=20,
                                                          gpu_memory_base=15, dataloader_workers=2)),
    # 45 % of the samples: a core waits on I/O and the GPUs idle
    "io-bound": ({}, Scenario(iowait_spike_fraction=0.45, iowait_stalls_gpu=True, dataloader_workers=6)),
    # every core at ~93 % and the GPUs idle half the time
    "cpu-bound": ({}, Scenario(cpu_util=93, cpu_noise=3, gpu_idle_fraction=(0.5,), dataloader_workers=6)),
    # two nodes, the second one's steps 40 % longer
    "straggler": ({"nodes": 2}, Scenario(step_ms=(300, 420), dataloader_workers=6)),
    # two nodes with the same step times (synchronous training), the second node's GPUs half as busy
    "straggler-gpu": ({"nodes": 2}, Scenario(gpu_util_busy=(88, 45), dataloader_workers=6)),
    # GPU memory +50 points from the first to the last step, steadily
    "gpu-memory-growth": ({}, Scenario(gpu_memory_growth=50, dataloader_workers=6)),
    # a 10-second recording
    "short": ({"duration_s": 10}, Scenario(init_s=2, dataloader_workers=6)),
}
EXPECTED = {"healthy": ("healthy", None), "short": ("insufficient-data", None),
            "straggler-gpu": ("problems", "load-imbalance"), "input-pipeline-workers": ("problems", "input-pipeline"),
            "gpu-underused-few-workers": ("problems", "gpu-underused")}


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    """The rule-output folder of each planted scenario (generated and analysed once)."""
    cache = {}

    def run(name):
        if name not in cache:
            kwargs, scenario = SCENARIOS[name]
            out = tmp_path_factory.mktemp(name)
            generate(out / "raw", **{**BASE, **kwargs}, scenario=scenario)
            cache[name] = analyze(out / "raw", out / "analysis").report_dir
        return cache[name]
    return run


@pytest.fixture(scope="module")
def diagnosed(analysed):
    return lambda name: diagnose(load_rule_outputs(analysed(name)))


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_planted_situation_is_diagnosed(diagnosed, name):
    diagnosis = diagnosed(name)
    status, cause = EXPECTED.get(name, ("problems", name))
    assert diagnosis.status == status, [(f.cause, f.share) for f in diagnosis.findings]
    if cause is None:
        assert all(not f.counts for f in diagnosis.findings)
    else:
        assert diagnosis.findings[0].cause == cause, [(f.cause, f.share) for f in diagnosis.findings]


def test_findings_carry_numbers_and_fixes(diagnosed):
    diagnosis = diagnosed("input-pipeline")
    ip = diagnosis.findings[0]
    in_loop = diagnosis.evidence.loop_s / diagnosis.evidence.duration_s
    assert ip.share == pytest.approx(0.5 * in_loop, abs=0.02)  # planted: half the samples, those in the loop count
    assert "num_workers from 1 to" in ip.fix and "pin_memory=True" in ip.fix
    under = diagnosed("gpu-underused").findings[0]
    assert "batch size" in under.fix and "GPU memory-controller activity (GPUMemoryUtilization: how busy, not how full) " \
        "p95 16 %" in under.evidence
    assert "Increase the batch size 2-4×" in under.fix and "fits" not in under.fix  # activity says nothing of room
    assert under.share == pytest.approx(0.77, abs=0.03)  # 1 - GPU mean (≈ 23 %)
    strag = diagnosed("straggler").findings[0]
    assert strag.metrics["who"] == "algo-2-27"
    assert strag.share == pytest.approx(1 - 300 / 420, abs=0.04)  # the others wait for the slow node
    memory = diagnosed("gpu-memory-growth").findings[0]
    assert memory.risk["rise_points"] == pytest.approx(50, abs=5)
    assert memory.seconds == 0 and memory.counts  # a risk that costs no time yet, first when nothing else does
    assert 200 < memory.risk["points_per_hour"] < 240  # 50 points over the ~14-minute loop
    io = diagnosed("io-bound").findings[0]
    assert io.share == pytest.approx(0.45 * in_loop, abs=0.02)


def test_short_recording_marks_rules_not_evaluated(diagnosed):
    diagnosis = diagnosed("short")
    assert diagnosis.findings == []
    assert {"LowGPUUtilization", "CPUBottleneck", "StepOutlier", "Dataloader"} <= set(diagnosis.not_evaluated)


def test_compare_says_which_causes_were_fixed_remain_or_are_new(analysed):
    from reportgen.compare.build import build_comparison
    from reportgen.compare.side import load_side

    a = load_side("A", analysed("input-pipeline"), name="before")
    b = load_side("B", analysed("gpu-memory-growth"), name="after")
    verdict = build_comparison(a, b).section("verdict")
    causes = verdict.data["causes"]
    assert (causes["a_status"], causes["b_status"]) == ("problems", "problems")
    assert causes["fixed"] == ["input-pipeline"] and causes["new"] == ["gpu-memory-growth"]
    assert causes["remaining"] == []
    fixed = next(c for c in causes["causes"] if c["cause"] == "input-pipeline")
    assert fixed["b_seconds"] is None and fixed["delta_seconds"] == pytest.approx(-fixed["a_seconds"])
    assert fixed["a_share"] == pytest.approx(0.46, abs=0.02)  # half the samples, those in the loop
    table = next(block for block in verdict.blocks if getattr(block, "id", "") == "causes-compare")
    assert [row[4] for row in table.rows] == ["fixed", "new"]
    same = build_comparison(a, load_side("B", analysed("input-pipeline"))).section("verdict").data["causes"]
    assert same["remaining"] == ["input-pipeline"] and same["causes"][0]["delta_seconds"] == 0
    short = build_comparison(a, load_side("B", analysed("short"))).section("rules").data["rows"]
    by_rule = {r["rule"]: r["status"] for r in short}
    assert by_rule["CPUBottleneck"] == "not evaluated in B"  # fired in A; B (10 s) could not judge it
    vs_short = build_comparison(a, load_side("B", analysed("short"))).section("verdict").data["causes"]
    assert vs_short["b_status"] == "insufficient-data" and vs_short["fixed"] == []
    assert vs_short["causes"][0]["status"] == "not judged in B"
