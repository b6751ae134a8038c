"""The recorded command's CPU and run-queue wait kept as a bounded cumulative series and read over a window
(reportgen/job_usage.py): the means equal the ticks' own over any window, whatever the recording's length."""

from __future__ import annotations

import pytest

from reportgen.job_usage import (MAX_ROWS, cpu_used, demand_ticks, loop_end_from_demand, loop_start_from_demand,
                                 time_before_cpu, usage_rows, window_usage)


def _ticks(cpu, queue, t0=1000.0, step=0.5):
    return [{"Timestamp": t0 + i * step, "CPUCores": c, "RunQueueCores": q} for i, (c, q) in enumerate(zip(cpu, queue))]


def test_the_rows_add_up_each_ticks_figures_over_its_own_time():
    # each tick's figures are over the time since the tick before: the first tick's lie before the series
    rows = usage_rows(_ticks([9.0, 0.2, 0.4, 1.0], [9.0, 0.8, 0.6, None]))
    assert rows == [[1000.0, 0.0, 0.0], [1000.5, 0.1, 0.4], [1001.0, 0.3, 0.7], [1001.5, 0.8, 0.7]]


def test_a_window_reads_the_ticks_own_means_and_leaves_start_up_out():
    # start-up: 2 s alone on its cores (1.0 used, no wait); the loop: 4 s starved (0.25 used, 0.75 waited)
    rows = usage_rows(_ticks([1.0] * 5 + [0.25] * 8, [0.0] * 5 + [0.75] * 8))
    loop = window_usage(rows, [(1002.0, 1006.0)])
    assert loop is not None and loop.seconds == pytest.approx(4.0)
    assert (loop.cpu_cores, loop.run_queue_cores) == (pytest.approx(0.25), pytest.approx(0.75))
    whole = window_usage(rows, [(1000.0, 1006.0)])
    assert whole.cpu_cores == pytest.approx(0.5) and whole.run_queue_cores == pytest.approx(0.5)
    # two spans (the loop less an export between them), and half a tick read as even
    split = window_usage(rows, [(1001.75, 1002.0), (1004.0, 1006.0)])
    assert split.cpu_cores == pytest.approx((0.25 * 1.0 + 2.0 * 0.25) / 2.25)


def test_a_day_of_ticks_keeps_a_bounded_series_that_reads_the_same_means():
    n = 172_800  # a day at 2 ticks a second
    cpu = [0.9 if (i // 7200) % 2 else 0.1 for i in range(n)]  # an hour busy, an hour not
    rows = usage_rows(_ticks(cpu, [0.5] * n))
    assert len(rows) <= MAX_ROWS and rows[-1][0] == 1000.0 + (n - 1) * 0.5
    hour = window_usage(rows, [(1000.0 + 3600.0, 1000.0 + 7200.0)])  # the second hour: busy
    assert hour.cpu_cores == pytest.approx(0.9, abs=0.01) and hour.run_queue_cores == pytest.approx(0.5, abs=1e-3)


def test_no_run_queue_account_and_windows_the_series_does_not_cover():
    rows = usage_rows([{"Timestamp": 1000.0 + i, "CPUCores": 0.5} for i in range(10)])
    assert all(q is None for _, _, q in rows)
    usage = window_usage(rows, [(1001.0, 1009.0)])
    assert usage.cpu_cores == pytest.approx(0.5) and usage.run_queue_cores is None
    assert window_usage(rows, [(1005.0, 1030.0)]) is None  # covered 4 s of 25: no mean from it
    assert usage_rows([{"Timestamp": 1000.0, "CPUCores": 0.5}]) == [] and window_usage([], [(0.0, 1.0)]) is None


@pytest.mark.parametrize("rows", [None, "x", [[1.0, 0.0, 0.0]], [[2.0, 0.0, 0.0], [1.0, 1.0, 1.0]],
                                  [[1.0, 0.0], [2.0, 1.0]], [[1.0, "a", 0.0], [2.0, 1.0, 1.0]],
                                  [[1.0, 0.0, 0.0], [float("nan"), 1.0, 1.0]]])
def test_damaged_series_give_no_mean_and_no_traceback(rows):
    assert window_usage(rows, [(1.0, 2.0)]) is None


def _demand(asked, t0=1000.0, step=0.5):
    """demand_ticks of a recording whose command asked ``asked`` cores a tick, half of it used, half waited."""
    return demand_ticks(usage_rows(_ticks([a / 2 for a in [0.0] + asked], [a / 2 for a in [0.0] + asked], t0, step)))


def test_demand_is_the_cpu_used_and_waited_for_a_tick():
    ticks = demand_ticks(usage_rows(_ticks([0.0, 0.2, 0.4], [0.0, 0.8, 0.1])))
    assert ticks == [(1000.0, 1000.5, pytest.approx(1.0)), (1000.5, 1001.0, pytest.approx(0.5))]
    # without the run queue a starved command and a waiting one both use little CPU: no demand to read
    assert demand_ticks(usage_rows(_ticks([0.0, 0.2, 0.4], [None] * 3))) == []
    assert demand_ticks("not a series") == [] and demand_ticks([[1.0, 0.0, 0.0], [0.5, 0.1, 0.1]]) == []


def test_a_loop_that_waits_starts_where_start_up_stopped_asking_for_a_core():
    """io-latency's shape: start-up asks for a core (1000.0-1003.0), the loop waiting on I/O for 0.2 of one, the
    profiled steps from 1006.0: the loop began at the end of start-up's last tick."""
    asked = [0.95, 1.0, 1.02, 0.98, 1.0, 1.01, 0.31, 0.2, 0.15, 0.22, 0.18, 0.25, 0.6, 0.7]
    ticks = _demand(asked)
    assert loop_start_from_demand(ticks, 1006.0) == 1003.0
    # a loop asking as much as its start-up (compute), or a start-up that once asked as little: no mark
    assert loop_start_from_demand(_demand([1.0] * 6 + [0.9, 1.1, 1.0, 0.95, 1.0, 1.0]), 1006.0) is None
    assert loop_start_from_demand(_demand([0.3] + asked[1:]), 1006.0) is None
    # under three ticks on either side: no level to compare
    assert loop_start_from_demand(ticks, 1004.0) is None
    assert loop_start_from_demand(_demand(asked[4:]), 1004.0) is None


def test_a_loop_that_waits_ends_where_the_work_after_it_asks_for_more_up_to_the_end():
    """After the profiler's last activity (1000.0) the loop asks for 0.2-0.4 of a core (one busy tick), then
    key_averages() and the teardown a whole one to the exit, whose last tick is not judged."""
    asked = [0.3, 0.2, 1.6, 0.25, 0.4, 0.2, 1.0, 0.98, 1.02, 1.0, 0.0]
    ticks = _demand(asked)
    assert loop_end_from_demand(ticks, 1000.0, 1005.5) == 1003.0
    # the rise must last up to the end: a pause of the loop's level in it leaves no mark
    assert loop_end_from_demand(_demand(asked[:8] + [0.3, 1.0, 0.0]), 1000.0, 1005.5) is None
    # bounded by the script's end: before it, the loop's level still
    assert loop_end_from_demand(ticks, 1000.0, 1003.0) is None
    assert loop_end_from_demand([], 1000.0, 1005.5) is None


def test_steps_of_a_known_cpu_are_found_back_however_long_they_waited_for_a_core():
    # start-up: 2 s at a whole core; then steps of 0.1 CPU s each, the first 10 at 0.2 cores (0.5 s a step), the next
    # 10 starved at 0.05 cores (2 s a step): 25 s of steps, 2.0 CPU s
    rows = usage_rows(_ticks([1.0] * 5 + [0.2] * 10 + [0.05] * 40 + [0.2] * 4, [0.0] * 59))
    assert cpu_used(rows, 1002.0, 1027.0) == pytest.approx(2.0)
    # from the 21st step's start, 20 steps' CPU back is where the steps began, not 20 of the last ones' 2 s
    assert time_before_cpu(rows, 1027.0, 20 * 0.1) == pytest.approx(1002.0)
    assert time_before_cpu(rows, 1027.0, 10 * 0.1) == pytest.approx(1007.0)
    # a fifth of a row inside it: the row it began in also holds what came before (start-up): not read
    assert time_before_cpu(rows, 1027.0, 0.005) is None
    # more CPU than the series holds before it, a time outside it, no series: none
    assert time_before_cpu(rows, 1027.0, 9.0) is None
    assert time_before_cpu(rows, 2000.0, 0.1) is None and cpu_used(rows, 990.0, 1027.0) is None
    assert time_before_cpu(None, 1027.0, 0.1) is None and cpu_used([[1, 2]], 1000.0, 1001.0) is None
