"""The recorded command's own process split by thread (reportgen/thread_usage.py): the main thread against the
others, kept as a bounded cumulative series and read over a window; the busiest other threads named."""

from __future__ import annotations

import pytest

from reportgen.job_usage import MAX_ROWS
from reportgen.thread_usage import busiest_threads, thread_rows, window_threads


def _ticks(main, queue, other, named=None, t0=1000.0, step=0.5):
    ticks = []
    for i, (m, q, o) in enumerate(zip(main, queue, other)):
        tick = {"Timestamp": t0 + i * step, "MainThreadCPUCores": m, "MainThreadRunQueueCores": q,
                "OtherThreadsCPUCores": o}
        if named is not None:
            tick["BusiestThreads"] = named[i]
        ticks.append(tick)
    return ticks


def test_the_rows_add_up_each_ticks_figures_over_its_own_time():
    rows = thread_rows(_ticks([9.0, 0.4, 0.6], [9.0, 0.2, 0.0], [9.0, 0.3, 0.5]))
    assert rows == [[1000.0, 0.0, 0.0, 0.0], [1000.5, 0.2, 0.1, 0.15], [1001.0, 0.5, 0.1, 0.4]]


def test_recordings_before_the_split_have_no_series():
    # job-metrics.jsonl written before the recorder split the process by thread: no such columns
    ticks = [{"Timestamp": 1000.0 + i, "CPUCores": 0.5, "RunQueueCores": 0.1} for i in range(10)]
    assert thread_rows(ticks) == [] and busiest_threads(ticks) == []
    assert window_threads([], [(1000.0, 1005.0)]) is None
    # a column negative or missing in a tick: that tick is left out, not the series
    ticks = _ticks([0.5] * 4, [0.1] * 4, [0.2, -1.0, 0.2, 0.2])
    assert [row[0] for row in thread_rows(ticks)] == [1000.0, 1001.0, 1001.5]


def test_a_window_reads_the_loops_means_and_what_the_main_thread_slept():
    # start-up: 2 s with the main thread alone on a core; the loop: 4 s beside a thread using 0.4 of a core,
    # the main thread 0.35 on a core and 0.25 waiting for one: it slept the other 40 %
    rows = thread_rows(_ticks([1.0] * 5 + [0.35] * 8, [0.0] * 5 + [0.25] * 8, [0.0] * 5 + [0.4] * 8))
    loop = window_threads(rows, [(1002.0, 1006.0)])
    assert loop is not None and loop.seconds == pytest.approx(4.0)
    assert (loop.main_cores, loop.main_queue_cores, loop.other_cores) == (
        pytest.approx(0.35), pytest.approx(0.25), pytest.approx(0.4))
    assert loop.main_blocked == pytest.approx(0.4)
    start = window_threads(rows, [(1000.0, 1002.0)])
    assert (start.main_cores, start.other_cores, start.main_blocked) == (pytest.approx(1.0), 0.0, 0.0)
    assert window_threads(rows, [(1004.0, 1010.0)]) is None  # the series covers a third of it
    assert window_threads([[1000.0, 0.0, 0.0], [1001.0, 1.0, 0.0]], [(1000.0, 1001.0)]) is None  # not 4 columns


def test_a_day_of_ticks_keeps_a_bounded_series_that_reads_the_same_means():
    n = 172_800
    other = [0.6 if (i // 7200) % 2 else 0.0 for i in range(n)]  # an hour beside a busy thread, an hour not
    rows = thread_rows(_ticks([0.5] * n, [0.1] * n, other))
    assert len(rows) <= MAX_ROWS
    busy = window_threads(rows, [(1000.0 + 3600.0, 1000.0 + 7200.0)])
    quiet = window_threads(rows, [(1000.0 + 7200.0, 1000.0 + 10800.0)])
    assert busy.other_cores == pytest.approx(0.6, abs=0.01) and quiet.other_cores == pytest.approx(0.0, abs=0.01)
    assert busy.main_cores == pytest.approx(0.5, abs=1e-3)


def test_the_busiest_threads_are_named_by_their_cpu_over_the_recording():
    named = [[["monitor", 12, 0.9]], [["monitor", 12, 0.4], ["python", 13, 0.5]], [["python", 13, 0.5]],
             [["python", 14, 0.1], ["bad"], "x", ["python", 15, float("nan")]]]
    ticks = _ticks([0.5] * 4, [0.0] * 4, [0.9, 0.9, 0.5, 0.1], named)
    # the first tick's figures lie before the series; then 0.5 s each
    assert busiest_threads(ticks) == [["python", 13, 0.5], ["monitor", 12, 0.2], ["python", 14, 0.05]]
