"""Memory over the steps from Kineto's ``[memory]`` events (``trace_analysis.memory``): real CPU recordings with a
planted per-step leak and a plateau against the script's truth, and small traces for each rule and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from reportgen.problems import ProblemLog
from reportgen.readers.kineto_trace import read_trace
from reportgen.trace_analysis import analyze_job, find_traces
from reportgen.trace_analysis.memory import LEAK_MIN_BYTES, device_name
from reportgen.trace_ranks import trace_ranks_of
from tests.support.paths import RECORDINGS

RUNS = RECORDINGS / "cpu-memory"
MIB = 1 << 20


def _run(name: str) -> tuple[dict, dict]:
    doc, _ = analyze_job(find_traces(RUNS / name))
    truth = json.loads((RUNS / name / "truth.json").read_text())
    (rank,) = doc["ranks"].values()
    return rank, truth


def test_a_planted_leak_is_growth_of_the_bytes_kept_per_step_owned_by_the_operator_that_made_them():
    rank, truth = _run("leak")
    (cpu,) = rank["memory"]["devices"]
    assert cpu["device"] == "cpu" and cpu["absolute"] is True and cpu["reserved"] is None
    growth = cpu["growth"]
    assert growth["verdict"] == "growing"
    assert growth["per_step_bytes"] == pytest.approx(truth["leak_bytes_per_step"], rel=0.02)
    assert growth["rising_share"] == 1.0 and growth["pairs"] == truth["active_steps"] - 1
    # what the steps before the last kept, all of it by torch.full
    assert cpu["kept"][0]["operator"] == "aten::full"
    assert cpu["kept"][0]["bytes"] == pytest.approx((truth["active_steps"] - 1) * truth["leak_bytes_per_step"], rel=0.02)
    assert cpu["kept"][0]["blocks"] == truth["active_steps"] - 1
    # the peak is in the last step: every kept tensor plus the gradients (the parameters' bytes)
    assert cpu["allocated"]["peak_step"] == rank["steps"][-1]["step"]
    assert cpu["at_peak"][0] == {"operator": "aten::full", "bytes": truth["active_steps"] * truth["leak_bytes_per_step"],
                                 "blocks": truth["active_steps"]}
    assert cpu["allocated"]["peak_bytes"] == pytest.approx(
        truth["active_steps"] * truth["leak_bytes_per_step"] + truth["param_bytes"], rel=0.02)


def test_a_plateau_is_never_a_leak_and_its_level_is_the_gradients():
    rank, truth = _run("plateau")
    (cpu,) = rank["memory"]["devices"]
    assert cpu["growth"]["verdict"] == "plateau"
    assert cpu["growth"]["per_step_bytes"] == 0 and cpu["growth"]["total_bytes"] == 0
    assert not cpu["kept"]  # nothing a step allocated outlives the next one
    # set_to_none: each step's gradients are allocated inside it and live at its end
    ends = {s["allocated_end_bytes"] for s in cpu["steps"]}
    assert len(ends) == 1 and ends.pop() == pytest.approx(truth["param_bytes"], rel=0.001)
    assert len(cpu["steps"]) == truth["active_steps"]


def test_the_typed_view_reads_what_the_analysis_wrote():
    rank, truth = _run("leak")
    (view,) = trace_ranks_of({"ranks": {"0": rank}})["0"].memory
    assert view.device == "cpu" and view.verdict == "growing" and view.absolute
    assert view.per_step_bytes == pytest.approx(truth["leak_bytes_per_step"], rel=0.02)
    assert view.kept[0].operator == "aten::full" and view.allocated.peak_step == rank["steps"][-1]["step"]
    assert view.steps == truth["active_steps"]


BASE = 1_700_000_000_000_000


def _op(name, ts, dur, tid=1, cat="cpu_op"):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": BASE + ts, "dur": dur}


def _mem(ts, nbytes, total=None, reserved=None, device=(1, 0), addr=None, tid=1):
    args = {"Bytes": nbytes, "Device Type": device[0], "Device Id": device[1]}
    if total is not None:
        args["Total Allocated"] = total
    if reserved is not None:
        args["Total Reserved"] = reserved
    if addr is not None:
        args["Addr"] = addr
    return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": tid,
            "ts": BASE + ts, "args": args}


def _steps_with(per_step: list[int], absolute=True):
    """Steps of 1000 µs; in each, a 1 MiB activation (freed in the step) and ``per_step[i]`` bytes kept by
    aten::cat (inside aten::empty: the allocator's own operator is passed over)."""
    events, total, addr = [], 0, 100
    for i, kept in enumerate(per_step):
        t = i * 1000
        events += [_op(f"ProfilerStep#{i + 1}", t, 1000), _op("aten::linear", t + 10, 100),
                   _op("aten::cat", t + 200, 100), _op("aten::empty", t + 210, 10)]
        total += MIB
        events.append(_mem(t + 50, MIB, total if absolute else None, 2 * total if absolute else None, addr=addr))
        total += kept
        events.append(_mem(t + 215, kept, total if absolute else None, 2 * total if absolute else None,
                           addr=addr + 1))
        total -= MIB
        events.append(_mem(t + 500, -MIB, total if absolute else None, 2 * total if absolute else None, addr=addr))
        addr += 2
    return events


def _analyse(tmp_path, events, **meta):
    (tmp_path / "rank-0.pt.trace.json").write_text(json.dumps({"traceEvents": events, **meta}))
    doc, problems = analyze_job(find_traces(tmp_path))
    return doc["ranks"]["0"], problems


def test_growth_per_step_with_its_owner_and_the_gpu_capacity(tmp_path):
    props = [{"id": 0, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 42_505_273_344}]
    rank, _ = _analyse(tmp_path, _steps_with([2 * MIB] * 6), deviceProperties=props)
    (gpu,) = rank["memory"]["devices"]
    assert gpu["device"] == "cuda:0" and gpu["capacity_bytes"] == 42_505_273_344
    assert gpu["growth"] == {"verdict": "growing", "pairs": 5, "per_step_bytes": 2 * MIB, "rising_share": 1.0,
                             "total_bytes": 10 * MIB}
    assert gpu["kept"] == [{"operator": "aten::cat", "bytes": 10 * MIB, "blocks": 5}]
    assert gpu["allocated"]["peak_bytes"] == 13 * MIB  # the last step's activation over 12 MiB kept
    assert gpu["reserved"]["peak_bytes"] == 26 * MIB
    assert gpu["at_peak"][0] == {"operator": "aten::cat", "bytes": 12 * MIB, "blocks": 6}
    assert gpu["at_peak"][1]["operator"] == "aten::linear"


@pytest.mark.parametrize("kept, verdict", [
    ([0, 0, 0, 0, 0, 0], "plateau"),
    ([4 * MIB, 0, 0, 0, 0, 0], "plateau"),  # the first step's optimizer state, then flat
    ([MIB, -MIB, MIB, -MIB, MIB, -MIB], "plateau"),  # up and down
    ([LEAK_MIN_BYTES // 8] * 6, "plateau"),  # a steady rise too small to matter
    ([2 * MIB] * 3, "unknown"),  # two steps compared: too few
])
def test_what_is_not_a_leak(tmp_path, kept, verdict):
    rank, _ = _analyse(tmp_path, _steps_with(kept))
    assert rank["memory"]["devices"][0]["growth"]["verdict"] == verdict


def test_a_trace_without_totals_is_read_relative_and_paired_with_text_tids(tmp_path):
    """torch 1.8 wrote only the bytes (no totals, no addresses) and its operators' tids as text."""
    events = _steps_with([2 * MIB] * 5, absolute=False)
    for e in events:
        if e["ph"] == "X":
            e["tid"] = "1"
        else:
            del e["args"]["Addr"]
    rank, _ = _analyse(tmp_path, events)
    (gpu,) = rank["memory"]["devices"]
    assert gpu["absolute"] is False and gpu["reserved"] is None and gpu["addresses"] is False
    assert gpu["growth"]["verdict"] == "growing" and gpu["growth"]["per_step_bytes"] == 2 * MIB
    assert gpu["kept"] == []  # without addresses what outlives a step cannot be told
    assert gpu["at_peak_basis"] == "allocated in the step up to the peak"
    assert {h["operator"] for h in gpu["at_peak"]} == {"aten::linear", "aten::cat"}


def test_devices_apart_and_bad_memory_events_counted(tmp_path):
    events = _steps_with([0] * 4) + [_mem(100, 64, 64, 0, device=(0, -1), addr=1, tid=1),
                                      _mem(150, "x", device=(0, -1)), {"ph": "i", "name": "[memory]", "ts": "no"}]
    rank, problems = _analyse(tmp_path, events)
    assert [d["device"] for d in rank["memory"]["devices"]] == ["cpu", "cuda:0"]
    assert rank["memory"]["events"] == 4 * 3 + 1
    assert any("memory event without numeric time or bytes" in str(item) for item in problems.items)


def test_ns_traces_and_no_memory_events():
    assert device_name(1, 3) == "cuda:3" and device_name(12, 0) == "type 12:0" and device_name(0, -1) == "cpu"


def test_a_ns_file_scales_memory_times_with_its_events(tmp_path):
    events = _steps_with([2 * MIB] * 4)
    for e in events:
        e["ts"] *= 1000
        if "dur" in e:
            e["dur"] *= 1000
    (tmp_path / "rank-0.pt.trace.json").write_text(json.dumps({"traceEvents": events}))
    trace = read_trace(tmp_path / "rank-0.pt.trace.json", ProblemLog())
    assert trace.time_unit == "ns"
    assert np.allclose(trace.memory.time_us[:3] - BASE, [50, 215, 500])


def test_a_trace_without_memory_events_has_no_memory_key(tmp_path):
    rank, _ = _analyse(tmp_path, [e for e in _steps_with([0] * 3) if e["ph"] == "X"])
    assert "memory" not in rank and trace_ranks_of({"ranks": {"0": rank}})["0"].memory == ()
