"""The profiler's cost per step from the pauses between its cycles, or from the steps after its one window
(diagnosis/profiler_cost.py), on hand-made accounts: what the pause holds, and every way it cannot be measured said,
never a traceback."""

from __future__ import annotations

import pytest

from reportgen.diagnosis.profiler_cost import after_window, profiler_overhead, window_note, with_collection
from reportgen.trace_ranks import TraceRank

T0 = 1.8e9  # epoch seconds


def _rank(per_step_ms, gaps, end_s=None, first=0, files=()):
    starts = [sum(per_step_ms[:i]) for i in range(len(per_step_ms))]
    entry = {"steps": [{"step": first + i, "start_ms": at, "dur_ms": v}
                       for i, (at, v) in enumerate(zip(starts, per_step_ms))], "files": list(files),
             "start_us": T0 * 1e6, "end_us": (end_s or T0 + 100) * 1e6,
             "account": {"steps": len(per_step_ms), "step_ms": sum(per_step_ms),
                         "slices_ms": {"compute": sum(per_step_ms)},
                         "per_step_ms": {"compute": list(per_step_ms)}, "between_cycles": gaps}}
    return TraceRank.of("0", entry)


def _gap(after, before, start_s, end_s):
    return {"after_step": after, "before_step": before, "unrecorded_steps": before - after - 1,
            "start_us": start_s * 1e6, "end_us": end_s * 1e6}


def test_the_pause_after_the_traces_last_write_is_the_unrecorded_steps():
    # 4 recorded steps of 10 ms; 10 steps between the cycles in a 1.5 s pause whose first 1.45 s the export took
    rank = _rank([10.0, 10.0, 12.0, 10.0], [_gap(1, 12, T0 + 1.0, T0 + 2.5)])
    overhead = profiler_overhead({"0": rank}, [(T0 + 1.2, T0 + 2.45)])
    assert overhead.unrecorded_steps == 10 and overhead.pauses == 1
    assert overhead.unrecorded_mean_ms == pytest.approx(5.0)  # (2.5 - 2.45) s over 10 steps
    assert overhead.recorded_median_ms == pytest.approx(10.0)
    assert overhead.per_step_ms == pytest.approx(5.0) and overhead.share == pytest.approx(0.5)
    assert overhead.export_in_pauses_ms == pytest.approx(1450.0)


def test_not_measurable_says_why():
    one_cycle = profiler_overhead({"0": _rank([10.0, 11.0], [])}, [])
    assert one_cycle.per_step_ms is None and "one profiling cycle" in one_cycle.note
    unknown = profiler_overhead({"0": _rank([10.0], [_gap(0, 12, T0 + 1, T0 + 2)])}, [])
    assert unknown.per_step_ms is None and "not known" in unknown.note
    few = profiler_overhead({"0": _rank([10.0], [_gap(0, 2, T0 + 1, T0 + 2)])}, [(T0 + 1.1, T0 + 1.9)])
    assert few.per_step_ms is None and "1 unrecorded step" in few.note
    assert profiler_overhead({}, []) is None


def test_odd_pauses_are_left_out_not_raised():
    for gap in ({"after_step": "x"}, {"after_step": 3, "before_step": 2, "unrecorded_steps": 0,
                                      "start_us": 5.0, "end_us": 4.0}, "not a dict", None):
        rank = _rank([10.0], [gap])
        assert rank.account.between_cycles == ()
        assert "one profiling cycle" in profiler_overhead({"0": rank}, []).note


def test_an_export_starts_where_its_cycle_ended():
    """torch collects the cycle's events before its handler starts (and stamps the file's name)."""
    rank = _rank([10.0], [_gap(0, 12, T0 + 1.0, T0 + 2.5)], end_s=T0 + 50.0)
    spans = with_collection([(T0 + 1.2, T0 + 2.4), (T0 + 50.3, T0 + 51.0), (T0 - 5.0, T0 - 4.0)], {"0": rank})
    assert spans == [(T0 + 1.0, T0 + 2.4), (T0 + 50.0, T0 + 51.0), (T0 - 5.0, T0 - 4.0)]


def _account_rank(slices: dict, steps: int = 2, perspective: str = "host"):
    per_step = {name: [ms / steps] * steps for name, ms in slices.items()}
    return TraceRank.of("0", {"account": {"steps": steps, "step_ms": sum(slices.values()), "slices_ms": slices,
                                          "per_step_ms": per_step, "perspective": perspective}})


def test_the_cost_comes_out_of_the_operators_then_the_python_between_them():
    from reportgen.diagnosis.profiler_cost import ProfilerOverhead, without_profiler_cost

    # 2 steps of 10 ms: 4 compute, 2 dispatch, 1 no operator, 3 waiting for data; the profiler costs 2 ms a step
    rank = _account_rank({"compute": 8.0, "dispatch": 4.0, "no_operator": 2.0, "data_wait": 6.0})
    account = without_profiler_cost({"0": rank}, ProfilerOverhead(per_step_ms=2.0, excluded=True))["0"].account
    assert account.profiler_ms == 4.0 and account.base_ms == 16.0
    assert account.slices_ms == pytest.approx({"compute": 16 / 3, "dispatch": 8 / 3, "no_operator": 2.0, "data_wait": 6.0,
                                               **{n: 0.0 for n in account.slices_ms if n not in
                                                  ("compute", "dispatch", "no_operator", "data_wait")}})
    assert account.share("data_wait") == pytest.approx(6 / 16) and account.every_step_share("data_wait") == \
        pytest.approx(6 / 16)
    assert account.per_step_ms["compute"] == pytest.approx((8 / 3, 8 / 3))
    # 7 ms a step is more than the operators hold (6): the last 2 ms from the Python between them; capped at 90 %
    account = without_profiler_cost({"0": rank}, ProfilerOverhead(per_step_ms=7.0, excluded=True))["0"].account
    assert account.slices_ms["compute"] == account.slices_ms["dispatch"] == 0.0
    assert account.slices_ms["no_operator"] == pytest.approx(0.0) and account.profiler_ms == pytest.approx(14.0)
    assert sum(account.share(n) for n in account.slices_ms) == pytest.approx(1.0)
    account = without_profiler_cost({"0": rank}, ProfilerOverhead(per_step_ms=9.9, excluded=True))["0"].account
    assert account.profiler_ms == pytest.approx(14.0) and account.base_ms == pytest.approx(6.0)  # all it can give


def test_nothing_measured_or_a_device_account_is_left_as_it_is():
    from reportgen.diagnosis.profiler_cost import ProfilerOverhead, without_profiler_cost

    ranks = {"0": _account_rank({"compute": 8.0, "no_operator": 2.0}),
             "1": _account_rank({"compute": 8.0, "data_wait": 2.0}, perspective="device")}
    assert without_profiler_cost(ranks, None) is ranks
    assert without_profiler_cost(ranks, ProfilerOverhead(note="one profiling cycle")) is ranks
    rebased = without_profiler_cost(ranks, ProfilerOverhead(per_step_ms=1.0, excluded=True))
    assert rebased["1"] is ranks["1"] and rebased["0"].account.profiler_ms == 2.0


def test_one_window_is_measured_from_the_steps_after_it_to_the_loops_end():
    """Steps 100-103 profiled (10 ms each, the window ends 40 ms in), its export to 0.1 s; the command ran 1,000
    steps: the other 896 to the loop's end at 1.0 s took 0.9 s, 1.0 ms each."""
    rank = _rank([10.0, 9.0, 11.0, 10.0], [], first=100)
    overhead = after_window({"0": rank}, (1000, "--steps 1000"), T0 + 1.0, [(T0 + 0.04, T0 + 0.1)])
    assert overhead.unrecorded_steps == 896 and overhead.unrecorded_mean_ms == pytest.approx(900.0 / 896, abs=1e-3)
    assert overhead.per_step_ms == pytest.approx(10.0 - 900.0 / 896, abs=1e-3) and overhead.excluded
    assert "896 steps after its window (step 104 to the last of the recorded command's --steps 1000)" in \
        overhead.measured_from
    note = window_note(overhead, xspace=True)
    assert note.startswith("The profiled window is not representative") and "kept as recorded" in note
    # steps after the window as long as its own: within a host's drift, shown but left in the shares
    close = after_window({"0": rank}, (1000, "--steps 1000"), T0 + 9.0, [(T0 + 0.04, T0 + 0.1)])
    assert close.per_step_ms == pytest.approx(10.0 - 8900.0 / 896, abs=1e-3) and not close.excluded
    assert window_note(close, xspace=True) == ""
    # the last of the command's steps profiled: nothing after it
    few = after_window({"0": rank}, (105, "--steps 105"), T0 + 1.0, [])
    assert few.per_step_ms is None and "1 of the --steps 105 steps after it" in few.note
    assert after_window({"0": _rank([10.0], [_gap(0, 12, T0 + 1, T0 + 2)])}, (100, "--steps 100"), T0 + 5, []) is None


def test_an_xspace_trace_gives_its_cost_back_pro_rata():
    """JAX's and TensorFlow's profilers slow the whole process: the cost comes out of every slice alike, and the
    shares stay as recorded."""
    from reportgen.diagnosis.profiler_cost import ProfilerOverhead, without_profiler_cost

    slices = {"compute": 8.0, "dispatch": 4.0, "no_operator": 2.0, "data_wait": 6.0}
    rank = TraceRank.of("0", {"files": ["vm.xplane.pb.gz"], "account": {
        "steps": 2, "step_ms": 20.0, "slices_ms": slices, "perspective": "host",
        "per_step_ms": {name: [ms / 2] * 2 for name, ms in slices.items()}}})
    account = without_profiler_cost({"0": rank}, ProfilerOverhead(per_step_ms=5.0, excluded=True))["0"].account
    assert account.profiler_ms == 10.0 and account.base_ms == 10.0
    assert {n: account.share(n) for n in slices} == pytest.approx({n: ms / 20.0 for n, ms in slices.items()})
