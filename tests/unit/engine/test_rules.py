"""Per rule: planted data that must trigger and data that must not, with exact counts."""

import json
import math

import numpy as np
import pytest

from reportgen.engine import run_rules
from reportgen.engine.params import LoadBalancingParams
from reportgen.engine.rules import (batch_size, cpu_bottleneck, dataloader, gpu_memory_increase, io_bottleneck,
                                    load_balancing, low_gpu_utilization, max_initialization_time,
                                    overall_framework_metrics, overall_system_usage, step_outlier)
from reportgen.rulebook import RULE_ORDER
from tests.support.engine_builders import T0, data, events, node, ticks, us

N = 1200  # 10 minutes at 500 ms -> windows 0..9, 120 ticks each


def _bottleneck_node(n_planted, dim="CPUUtilization", hot=95.0, first=0):
    i = np.arange(N)
    planted = (i >= first) & (i < first + n_planted)
    return node(ticks(N), {
        "cpu0/" + dim: np.where(planted, hot, 5.0),
        "cpu1/" + dim: 3.0,
        "gpu0/GPUUtilization": np.where(planted, 5.0, 80.0),
    })


def test_cpu_bottleneck_planted_fraction_triggers_in_the_right_windows():
    r = cpu_bottleneck.evaluate(data([_bottleneck_node(700)]))
    # Patience 1000 is passed after window 8 (1080 snapshots): 700/1080 and 700/1200 are > 50 %.
    assert (r["RuleTriggered"], r["Violations"], r["Datapoints"]) == (2, 700, 1200)
    assert r["Details"]["low_gpu_utilization"] == 700
    first = repr(float(ticks(1)[0]))
    assert r["Details"]["bottlenecks"][first] == {"GPUs": 1, "CPUs": 1}
    assert len(r["Details"]["bottlenecks"]) == 700
    assert r["RuleParameters"] == "threshold:50\ncpu_threshold:90\ngpu_threshold:10\npatience:1000"


def test_cpu_bottleneck_below_threshold_does_not_trigger():
    r = cpu_bottleneck.evaluate(data([_bottleneck_node(500)]))  # 500/1080 = 46 %
    assert (r["RuleTriggered"], r["Violations"], r["Datapoints"]) == (0, 500, 1200)
    assert "phase" not in r["Details"]


def test_cpu_bottleneck_correlates_framework_events_during_bottlenecks():
    # Bottlenecks at ticks 500..1199; only those of the triggered windows 8 and 9 (ticks 960..1199,
    # T0+480 s .. T0+600 s) are correlated: the EVAL step covers them, the TRAIN step does not.
    ev = events([{"start_us": us(T0), "end_us": us(T0 + 400), "name": "Step:ModeKeys.TRAIN", "step_num": "1"},
                 {"start_us": us(T0 + 470), "end_us": us(T0 + 700), "name": "Step:ModeKeys.EVAL", "step_num": "1"}])
    r = cpu_bottleneck.evaluate(data([_bottleneck_node(700, first=500)], ev))
    assert (r["RuleTriggered"], r["Violations"]) == (2, 700)
    assert r["Details"]["phase"] == {"Step:ModeKeys.EVAL": 100.0}


def test_io_bottleneck_counts_iowait_and_keeps_cpus_label():
    r = io_bottleneck.evaluate(data([_bottleneck_node(700, "I/OWaitPercentage", 60.0)]))
    assert (r["RuleTriggered"], r["Violations"], r["Datapoints"]) == (2, 700, 1200)
    assert set(next(iter(r["Details"]["bottlenecks"].values()))) == {"GPUs", "CPUs"}
    r = io_bottleneck.evaluate(data([_bottleneck_node(700, "I/OWaitPercentage", 40.0)]))
    assert (r["RuleTriggered"], r["Violations"]) == (0, 0)


def test_low_gpu_utilization_once_per_window_after_patience():
    r = low_gpu_utilization.evaluate(data([node(ticks(N), {"gpu0/GPUUtilization": 20.0})]))
    assert (r["RuleTriggered"], r["Violations"], r["Datapoints"]) == (2, 2, 1200)
    d = r["Details"]["algo-1"]["gpu0"]
    assert d["gpu_95"] == 20.0 and d["gpu_max"] == 20.0
    assert r["Details"]["last_timestamp"] == (T0 + 9 * 60) * 1_000_000


def test_low_gpu_utilization_fluctuating_and_healthy():
    fluct = np.where(np.arange(N) % 4 == 0, 0.0, 90.0)  # p95 90 > 70 and p5 0 < 10
    r = low_gpu_utilization.evaluate(data([node(ticks(N), {"gpu0/GPUUtilization": fluct})]))
    assert r["RuleTriggered"] == 2
    healthy = np.where(np.arange(N) % 2 == 0, 80.0, 90.0)
    r = low_gpu_utilization.evaluate(data([node(ticks(N), {"gpu0/GPUUtilization": healthy})]))
    assert (r["RuleTriggered"], r["Details"]) == (0, {})


def _reference_memory_violations(v, window=10, increase=5, patience=1000):
    """The rule's formula, written out per sample in plain Python."""
    count = 0
    for i in range(len(v)):
        hist = v[: i + 1]
        if len(hist) > window + 1:
            cur = sum(hist[-window:]) / window
            prev_vals = hist[-window - 1:-2]
            prev = sum(prev_vals) / len(prev_vals)
            if cur - prev > increase and len(hist) > patience:
                count += 1
    return count


def test_gpu_memory_increase_counts_samples():
    v = np.where(np.arange(N) >= 1100, 80.0, 0.0)
    r = gpu_memory_increase.evaluate(data([node(ticks(N), {"gpu0/GPUMemoryUtilization": v})]))
    assert r["Violations"] == r["RuleTriggered"] == _reference_memory_violations(list(v)) == 10
    d = r["Details"]["algo-1"]["gpu0"]
    assert d["gpu_max"] == 80.0 and math.isclose(d["increase"], 80 - 80 * 8 / 9)
    assert r["Details"]["last_timestamp"] == (T0 + 9 * 60) * 1_000_000  # sample 1109 is in window 9
    # A jump before patience is ignored; a flat series never fires.
    early = np.where(np.arange(N) >= 500, 80.0, 0.0)
    r = gpu_memory_increase.evaluate(data([node(ticks(N), {"gpu0/GPUMemoryUtilization": early})]))
    assert (r["Violations"], r["Details"]) == (0, {})


def _batch_node(gpu=10.0):
    return node(ticks(N), {"cpu0/CPUUtilization": 10.0, "cpu1/CPUUtilization": 20.0,
                           "gpu0/GPUUtilization": gpu, "gpu0/GPUMemoryUtilization": 10.0})


def test_batch_size_triggers_per_window_and_reports_real_last_window():
    r = batch_size.evaluate(data([_batch_node()]))
    assert (r["RuleTriggered"], r["Violations"], r["Datapoints"]) == (2, 2, 1200)
    d = r["Details"]
    assert set(d["algo-1"]) == {"cpu", "gpu0", "gpu0_memory"}
    assert d["algo-1"]["cpu"]["p50"] == 15.0
    assert d["last_timestamp"] == (T0 + 9 * 60) * 1_000_000
    r = batch_size.evaluate(data([_batch_node(gpu=90.0)]))
    assert (r["RuleTriggered"], r["Details"]) == (0, {})


def test_batch_size_node_without_gpu_memory_does_not_crash():
    n = node(ticks(N), {"cpu0/CPUUtilization": 10.0, "gpu0/GPUUtilization": 10.0})
    assert batch_size.evaluate(data([n]))["RuleTriggered"] == 0


def test_max_initialization_time_fires_for_a_long_init():
    n = node(ticks(360, interval=5.0), {"cpu0/CPUUtilization": 5.0}, interval=5.0)  # 30 minutes
    step = {"start_us": us(T0 + 25.5 * 60), "end_us": us(T0 + 25.5 * 60 + 1), "name": "Step:ModeKeys.TRAIN",
            "step_num": "0"}
    r = max_initialization_time.evaluate(data([n], events([step])))
    # Windows starting at 21, 22, 23, 24 min are > 20 min after T0 with no step yet.
    assert (r["RuleTriggered"], r["Violations"], r["Datapoints"]) == (4, 4, 1)
    assert r["Details"]["step_num"] == {"first": step["start_us"]}
    assert r["Details"]["job_start"] == T0 + 0.01
    early = dict(step, start_us=us(T0 + 300), end_us=us(T0 + 301))
    r = max_initialization_time.evaluate(data([n], events([early, dict(early, start_us=us(T0 + 400))])))
    assert (r["RuleTriggered"], r["Details"]["step_num"]) == (0, {"first": us(T0 + 300), "last": us(T0 + 400)})


def test_load_balancing_detects_an_imbalanced_pair_and_keeps_100_percent():
    rng = np.random.default_rng(1)
    busy = np.r_[np.full(N // 2, 100.0), rng.uniform(90, 99, N - N // 2)]
    idle = rng.uniform(0, 10, N)
    r = load_balancing.evaluate(data([node(ticks(N), {"gpu0/GPUUtilization": busy, "gpu1/GPUUtilization": idle})]))
    assert (r["RuleTriggered"], r["Violations"], r["Datapoints"]) == (2, 2, 1200)
    assert math.isclose(r["Details"]["algo-1"]["distances"]["gpu0"]["gpu1"], math.sqrt(math.log(2)))
    wl = r["Details"]["algo-1"]["workloads"]
    assert len(wl["gpu0"]) == 49 and sum(wl["gpu0"]) == N and wl["gpu0"][-1] >= N // 2
    same = load_balancing.evaluate(data([node(ticks(N), {"gpu0/GPUUtilization": idle, "gpu1/GPUUtilization": idle})]))
    assert (same["RuleTriggered"], same["Details"]["algo-1"]["distances"]) == (0, {"gpu0": {"gpu1": 0.0}})
    # Three GPUs, one slow: two of the three pairs are imbalanced in each of windows 8 and 9.
    r = load_balancing.evaluate(data([node(ticks(N), {"gpu0/GPUUtilization": busy, "gpu1/GPUUtilization": busy,
                                                      "gpu2/GPUUtilization": idle})]), LoadBalancingParams())
    assert r["Violations"] == 4


def test_overall_system_usage_percentiles_and_cpu_only():
    v = np.arange(101, dtype=float)  # 0..100
    n = node(ticks(101), {"cpu0/CPUUtilization": v, "cpu1/CPUUtilization": v, "MemoryUsedPercent": 12.345,
                          "ReceiveBytesPerSecond/Algorithm": 10.0, "TransmitBytesPerSecond/Algorithm": 5.0,
                          "ReceiveBytesPerSecond/Platform": 1000.0})
    r = overall_system_usage.evaluate(data([n]))
    assert r["Details"]["CPU"]["algo-1"] == {"max": 100.0, "p99": 99.0, "p95": 95.0, "p90": 90.0, "p50": 50.0, "min": 0}
    assert r["Details"]["Network"]["algo-1"]["max"] == 15.0
    assert r["Details"]["CPU memory"]["algo-1"]["p50"] == 12.35
    assert r["Details"]["GPU"] == {} and r["Details"]["GPU memory"] == {}
    assert list(r["Details"]) == ["Network", "GPU", "CPU", "CPU memory", "GPU memory", "I/O"]
    assert (r["Datapoints"], r["RuleTriggered"], r["RuleParameters"]) == (101, 0, "")


def _steps(durations, start=T0 + 1.0, gap=0.05, node_id="algo-1-27"):
    rows, t = [], start
    for i, d in enumerate(durations):
        rows.append({"start_us": us(t), "end_us": us(t + d), "name": "Step:ModeKeys.TRAIN", "step_num": str(i),
                     "node_id": node_id})
        t += d + gap
    return rows


def test_step_outlier_triggers_with_exact_outliers():
    durs = [0.1] * 200 + [1.0] * 15
    r = step_outlier.evaluate(data(ev=events(_steps(durs))))
    sd = r["Details"]["step_details"]["algo-1-27"]
    assert (r["RuleTriggered"], r["Violations"], r["Datapoints"]) == (1, 15, 215)
    assert sd["number_of_outliers"] == 15 and sd["step_numbers"] == [str(i) for i in range(200, 215)]
    assert sum(sd["probs"]) == 200 and len(sd["binedges"]) == 101
    assert sd["phase"] == "Step:ModeKeys.TRAIN"
    assert r["Details"]["phase"] == {"Step:ModeKeys.TRAIN": 100.0}  # correlation of the outlier steps
    r = step_outlier.evaluate(data(ev=events(_steps([0.1] * 200 + [1.0] * 5))))
    assert (r["RuleTriggered"], r["Violations"]) == (0, 0)
    assert r["Details"]["step_details"]["algo-1-27"]["number_of_outliers"] == 5
    assert r["RuleParameters"] == "threshold:3\nmode:None\nn_outliers:10\nstddev:3"


def _loader_events(pids, seconds=30, rows_only=False):
    rows = [{"start_us": us(T0 + 0.5), "end_us": us(T0 + 0.6), "name": "_MultiProcessingDataLoaderIter.__init__",
             "phase": "DataLoaderIterInitialize", "num_workers": float(len(pids)), "pin_memory": 0}]
    for s in range(seconds):
        for p in pids:
            rows.append({"start_us": us(T0 + 1 + s), "end_us": us(T0 + 1.25 + s), "name": "DataLoaderWorker::fetch",
                         "phase": "DataLoaderWorker", "arg_pid": p})
    return rows if rows_only else events(rows)


def test_dataloader_too_few_workers():
    n = node(ticks(10), {f"cpu{i}/CPUUtilization": 5.0 for i in range(8)})
    r = dataloader.evaluate(data([n], _loader_events([11, 12])))
    assert (r["RuleTriggered"], r["Violations"], r["Datapoints"]) == (1, 1, 60)
    d = r["Details"]
    assert (d["pin_memory"], d["num_workers"], d["cores"], d["dataloaders"]) == (False, 2, 8, 2)
    assert d["dataloading_time"]["p50"] == 0.25 and sum(d["dataloading_time"]["probs"]) == 60
    r = dataloader.evaluate(data([n], _loader_events(list(range(8)))))
    assert (r["RuleTriggered"], r["Violations"], r["Details"]["dataloaders"]) == (0, 0, 8)


def test_dataloader_ignores_an_infinite_worker_count_regression():
    """``"num_workers": Infinity`` in a trace reached int() in the rule: OverflowError, no report."""
    ev = _loader_events([11, 12], rows_only=True) + [
        {"start_us": us(T0 + 0.7), "end_us": us(T0 + 0.8), "name": "_MultiProcessingDataLoaderIter.__init__",
         "phase": "DataLoaderIterInitialize", "num_workers": math.inf, "pin_memory": 0}]
    n = node(ticks(10), {f"cpu{i}/CPUUtilization": 5.0 for i in range(8)})
    r = dataloader.evaluate(data([n], events(ev)))
    assert (r["RuleTriggered"], r["Details"]["num_workers"], r["Details"]["dataloaders"]) == (1, 2, 2)


def test_overall_framework_metrics_others_ratio_and_zero_groups():
    ev = events([
        {"start_us": 1_700_000_000_000_000, "end_us": 1_700_000_000_000_010, "name": "Step:ModeKeys.TRAIN", "step_num": "0"},
        {"start_us": 1_700_000_000_000_020, "end_us": 1_700_000_000_000_030, "name": "Step:ModeKeys.TRAIN", "step_num": "1"},
        {"start_us": 1_700_000_000_000_000, "end_us": 1_700_000_000_000_030, "name": "aten::add", "phase": "cpu_functions"},
        {"start_us": 1_700_000_000_000_000, "end_us": 1_700_000_000_000_070, "name": "aten::add", "phase": "gpu_functions-dev:0"},
        {"start_us": 1_700_000_000_000_000, "end_us": 1_700_000_000_000_000, "name": "x", "phase": "DataLoaderWorker"},
    ])
    r = overall_framework_metrics.evaluate(data(ev=ev))
    d = r["Details"]
    assert d["ratio"] == {"gpu_functions-dev:0": 70.0, "cpu_functions": 30.0}
    assert d["phase"] == pytest.approx({"Step:ModeKeys.TRAIN": 20 / 30 * 100, "others": 10 / 30 * 100})
    assert d["CPU"] == {"aten::add": 100.0} and d["CPU_total"] == {"aten::add": 30}
    assert "general" not in d or d["general"] == {}  # zero-duration group: no division by zero
    assert (r["RuleTriggered"], r["Datapoints"], r["RuleParameters"]) == (0, 0, "")
    empty = overall_framework_metrics.evaluate(data([node(ticks(5), {"cpu0/CPUUtilization": 1.0})]))
    assert empty["Details"] == {"ratio": {}, "phase": {}, "phase_time": {}}


def test_all_rules_run_on_empty_gpu_free_data_and_serialise():
    out = run_rules(data([node(ticks(5), {"cpu0/CPUUtilization": 1.0})]))
    assert list(out) == list(RULE_ORDER)
    for name, doc in out.items():
        assert list(doc) == ["RuleTriggered", "Violations", "Details", "Datapoints", "RuleParameters"], name
        json.dumps(doc, allow_nan=False)
