"""The typed views of the rule-output details that several rooms read (rule_outputs.NodeUsage /
system_usage_of, NodeGpus / gpus_of, DataloaderDetails, BottleneckDetails, BalancingNode / balancing_of,
StepDetails / WorkerSteps, FrameworkBreakdowns): built
from a real job's rule outputs, and from details with missing and garbage values, which must give None, never
raise."""

from __future__ import annotations

import pytest

from reportgen.rule_outputs import (NO_PHASE, BalancingNode, BottleneckDetails, BottleneckMoment, DataloaderDetails,
                                    FrameworkBreakdowns, GpuDistance, GpuStats, NodeGpus, NodeUsage, StepDetails, StepStats, WorkerSteps,
                                    balancing_of, gpus_of, load_rule_outputs, system_usage_of)
from tests.support.paths import REAL, need

HUGE = 10**400
JOB = "suinaowawa-b3deafcd"  # two nodes, one GPU each, with Dataloader details
BALANCING_JOB = "klayliu-3a0b1b22"  # one node, four GPUs in LoadBalancing's workloads
BREAKDOWN_JOB = "callmesora-b2fb5951"  # CPUBottleneck with a framework breakdown of its moments


@pytest.fixture(scope="module")
def real():
    return load_rule_outputs(need(REAL / JOB / "profiler-reports"))


@pytest.mark.fixtures
def test_system_usage_of_a_real_job(real):
    usage = system_usage_of(real.get("OverallSystemUsage").details)
    assert [(u.metric, u.node) for u in usage][:6] == [("Network", "algo-1"), ("Network", "algo-2"),
                                                       ("GPU", "algo-1"), ("GPU", "algo-2"),
                                                       ("CPU", "algo-1"), ("CPU", "algo-2")]
    cpu2 = next(u for u in usage if (u.metric, u.node) == ("CPU", "algo-2"))
    assert (cpu2.max, cpu2.p99, cpu2.p95, cpu2.p50, cpu2.min, cpu2.p90) == (100.0, 66.5, 46.6, 40.4, 0, None)
    assert cpu2.listed == ("max", "p99", "p95", "p50", "min") and cpu2.stat("p95") == 46.6
    network = usage[0]
    assert network.max == 97139519.97 and isinstance(network.p50, int)  # kept as given: outputs do not move


@pytest.mark.fixtures
def test_gpus_of_a_real_job(real):
    nodes = gpus_of(real.get("LowGPUUtilization").details)
    assert [n.node for n in nodes] == ["algo-1", "algo-2"]  # last_timestamp is bookkeeping, not a node
    assert nodes[0].keys == ("gpu0",) and [g.gpu for g in nodes[0].gpus] == ["gpu0"]
    gpu = nodes[1].gpus[0]
    assert (gpu.stat("gpu_max"), gpu.stat("gpu_95"), gpu.stat("gpu_5"), gpu.stat("p75")) == (100.0, 100.0, 0.0, 62.0)
    memory = gpus_of(real.get("GPUMemoryIncrease").details)
    assert [round(n.gpus[0].stat("increase"), 3) for n in memory] == [6.322, 11.544]
    assert memory[0].stats()["gpu0"]["p95"] == 97.0


@pytest.mark.fixtures
def test_dataloader_details_of_a_real_job(real):
    loader = DataloaderDetails.of(real.get("Dataloader").details)
    assert loader.listed and (loader.cores, loader.dataloaders, loader.num_workers) == (4, 1, 0)
    assert loader.pin_memory is False and loader.prefetch is None
    assert (loader.time_p25, loader.time_p50, loader.time_p95) == (1.030003, 1.061709, 1.19639)
    assert len(loader.time_probs) == 100 and len(loader.time_binedges) == 101


def test_system_usage_of_garbage_is_none_not_an_error():
    details = {"CPU": {"n1": {"p95": "high", "p50": HUGE, "max": float("nan"), "min": True, "p99": 7},
                       "n2": "not stats", "n3": {"other": 1}},
               "GPU": [1, 2], "I/O": {}}
    usage = system_usage_of(details)
    assert [u.node for u in usage] == ["n1", "n2", "n3"]
    n1, n2, n3 = usage
    assert n1 == NodeUsage("CPU", "n1", max=None, p99=7, p95=None, p50=None, min=None,
                           listed=("max", "p99", "p95", "p50", "min"), any_listed=True)
    assert n2 == NodeUsage("CPU", "n2") and not n2.any_listed
    assert n3.listed == () and n3.any_listed and n3.stat("other") is None
    assert system_usage_of(None) == () and system_usage_of("nonsense") == ()


def test_gpus_of_garbage_is_none_not_an_error():
    details = {"n1": {"gpu0": {"gpu_max": "full", "p95": HUGE, "p50": 3}, "gpu1": 12, "last_timestamp": 5},
               "n2": [], "last_timestamp": 9}
    assert gpus_of(details) == (NodeGpus("n1", (GpuStats("gpu0", {"gpu_max": "full", "p95": HUGE, "p50": 3}),),
                                         ("gpu0", "gpu1", "last_timestamp")),)
    gpu = gpus_of(details)[0].gpus[0]
    assert (gpu.stat("gpu_max"), gpu.stat("p95"), gpu.stat("p50"), gpu.stat("absent")) == (None, None, 3, None)
    assert gpus_of(None) == () and gpus_of(["n1"]) == ()


def test_dataloader_details_of_garbage_is_none_not_an_error():
    loader = DataloaderDetails.of({"cores": "four", "dataloaders": HUGE, "num_workers": 2.0, "pin_memory": "yes",
                                   "prefetch": True, "dataloading_time": {"p50": float("inf"), "p95": 0.5,
                                                                          "probs": "1,2", "binedges": [0, 1]}})
    assert loader == DataloaderDetails(listed=True, cores=None, dataloaders=None, num_workers=2.0, pin_memory=None,
                                       prefetch=True, time_p95=0.5, time_binedges=[0, 1])
    assert DataloaderDetails.of({}) == DataloaderDetails() and not DataloaderDetails.of(None).listed
    assert DataloaderDetails.of({"dataloading_time": []}).listed


@pytest.mark.fixtures
def test_bottleneck_details_of_a_real_job(real):
    cpu = BottleneckDetails.of(real.get("CPUBottleneck").details)
    assert cpu.listed and cpu.low_gpu_utilization == 33056 and len(cpu.moments) == 23967
    assert cpu.moments[:2] == (BottleneckMoment("1678025719.500587", 1678025719.500587, 2, 1),
                               BottleneckMoment("1678025720.000258", 1678025720.000258, 1, 1))
    assert cpu.general == {}
    io = BottleneckDetails.of(real.get("IOBottleneck").details)
    assert len(io.moments) == 39 and io.moments[0].at_s == 1678025718.000312 and io.low_gpu_utilization == 33056


@pytest.mark.fixtures
def test_bottleneck_details_keep_the_framework_breakdown():
    outputs = load_rule_outputs(need(REAL / BREAKDOWN_JOB / "profiler-reports"))
    cpu = BottleneckDetails.of(outputs.get("CPUBottleneck").details)
    assert (cpu.low_gpu_utilization, len(cpu.moments)) == (1149, 712)
    assert cpu.general == {"DataLoaderWorker": 99.9971167808994, "Forward": 0.002883219100586154}


def test_bottleneck_details_of_garbage_is_none_not_an_error():
    details = {"low_gpu_utilization": HUGE, "general": {"Dataloader": "most", "step": 4, 7: float("nan"), "x": 2.5},
               "bottlenecks": {"nan": {"CPUs": 3}, "1e999": [1], "12.5": {"CPUs": True, "GPUs": HUGE},
                               "soon": {"CPUs": 2.0, "GPUs": "one"}}}
    cpu = BottleneckDetails.of(details)
    assert cpu.low_gpu_utilization is None and cpu.general == {"step": 4, "x": 2.5}
    assert cpu.moments == (BottleneckMoment("nan", None, 3, None), BottleneckMoment("1e999", None),
                           BottleneckMoment("12.5", 12.5), BottleneckMoment("soon", None, 2.0, None))
    assert BottleneckDetails.of({"bottlenecks": [1, 2], "general": "x"}) == BottleneckDetails(listed=True)
    assert BottleneckDetails.of(None) == BottleneckDetails() and not BottleneckDetails.of("x").listed


@pytest.mark.fixtures
def test_balancing_of_a_real_job(real):
    assert [(n.node, n.gpus, n.distances) for n in balancing_of(real.get("LoadBalancing").details)] == [
        ("algo-1", ("gpu0",), ()), ("algo-2", ("gpu0",), ())]
    outputs = load_rule_outputs(need(REAL / BALANCING_JOB / "profiler-reports"))
    (node,) = balancing_of(outputs.get("LoadBalancing").details)
    assert node.has_workloads and node.gpus == ("gpu0", "gpu1", "gpu2", "gpu3")
    assert [len(c) for c in node.histograms.values()] == [49] * 4 and node.histograms["gpu1"][:3] == [1066, 0, 0]


def test_balancing_of_garbage_is_none_not_an_error():
    details = {"n1": {"workloads": {"gpu0": [3, 1], "gpu1": [], "gpu2": "many"},
                      "distances": {"gpu0": {"gpu1": 0.25, "gpu2": "far", "gpu3": HUGE}, "gpu1": 0.5}},
               "n2": {"workloads": {}}, "n3": {"workloads": [1, 2], "distances": {"gpu0": {"gpu1": 2}}},
               "n4": "not a node", "last": 7}
    n1, n2, n3 = balancing_of(details)
    assert n1 == BalancingNode("n1", True, ("gpu0", "gpu1", "gpu2"), {"gpu0": [3, 1]},
                               (GpuDistance("gpu0", "gpu1", 0.25),))
    assert n2 == BalancingNode("n2", True) and n3 == BalancingNode("n3", False, (), {}, (GpuDistance("gpu0", "gpu1", 2),))
    assert balancing_of(None) == () and balancing_of([{"workloads": {}}]) == ()


@pytest.mark.fixtures
def test_step_details_of_a_real_job(real):
    details = real.get("StepOutlier").details
    steps = StepDetails.of(details)
    assert steps.listed and list(steps.workers) == ["algo-1-28", "algo-2-27"]
    node = steps.workers["algo-2-27"]
    assert node.worker == "algo-2-27" and node.is_object and node.phase == "Step:ModeKeys.EVAL"
    assert node.stats == StepStats(0.02131456460674157, 0.030028, 0.026159010000000003, 0.0239478, 0.0205455, 0.018945)
    assert node.stats.stat("p50") == 0.0205455 and node.stats.stat("gpu_max") is None
    assert node.outliers_as_written == 49 and node.outliers == 49 and node.stddev == 0.0 and node.steps is None
    raw = details["step_details"]["algo-2-27"]
    assert node.probs is raw["probs"] and node.binedges is raw["binedges"] and node.step_numbers is raw["step_numbers"]


def test_step_details_of_garbage_keep_what_the_section_shows_as_written():
    details = {"step_details": {"a": [1], "b": {"step_stats": {"mean": "1", "p50": HUGE, "p99": 2, "min": True},
                                                  "number_of_outliers": "3", "phase": None, "stddev": "x",
                                                  "steps": 7, "probs": "p"},
                                "c": {"number_of_outliers": 2.0, "steps": True}}}
    steps = StepDetails.of(details)
    assert steps.workers["a"] == WorkerSteps("a", is_object=False)
    b = steps.workers["b"]
    assert b.stats == StepStats(p99=2.0) and isinstance(b.stats.p99, float)
    assert b.outliers_as_written == "3" and b.outliers == 0  # shown as written, counted as no number
    assert b.phase is None and b.stddev is None and b.steps == 7 and b.probs == "p" and b.binedges is None
    assert b.step_numbers == []  # absent: an empty list, as the section kept it
    c = steps.workers["c"]
    assert c.phase is NO_PHASE and c.outliers == 2 and c.steps is None and c.stats == StepStats()
    assert StepDetails.of({"step_details": [1]}) == StepDetails(listed=True)  # given, but no object
    assert StepDetails.of(None) == StepDetails() == StepDetails.of({"step_details": {}})


@pytest.mark.fixtures
def test_framework_breakdowns_of_a_real_job(real):
    job = FrameworkBreakdowns.of(real.get("OverallFrameworkMetrics").details)
    assert job.charted == ["phase", "ratio", "general"] and list(job.listed) == job.charted
    assert job.phase == {"Step:ModeKeys.TRAIN": 7.597550593979569, "others": 90.64519057204792,
                         "Step:ModeKeys.EVAL": 1.7572588339725022}
    assert job.others_pct == 90.64519057204792 and job.ratio["cpu_functions"] == 47.84185056618064
    assert job.general["Forward"] == 96.61064060851888 and job.forward_backward == {} and job.horovod == {}


def test_framework_breakdowns_of_garbage_keep_the_numbers_only():
    details = {"phase": {"TRAIN": "most", "others": 0, "EVAL": 0.0}, "ratio": [1, 2], "general": {"Forward": 3,
               "x": HUGE, "y": float("nan"), "z": True}, "horovod": "x", "forward_backward": {"backward": 1e999}}
    found = FrameworkBreakdowns.of(details)
    # every numeric share is listed (report.json's section data); only a breakdown summing above 0 is charted
    assert found.listed == {"phase": {"others": 0.0, "EVAL": 0.0}, "general": {"Forward": 3.0}}
    assert found.charted == ["general"] and found.phase == {} and found.others_pct is None
    assert isinstance(found.general["Forward"], float)
    assert FrameworkBreakdowns.of(None) == FrameworkBreakdowns() and FrameworkBreakdowns().charted == []
