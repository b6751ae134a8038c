"""The rule-output loader's number checks on values JSON can hold but a float cannot: an integer of 400
digits, NaN, a bool. They must never raise (``math.isfinite`` does on such an integer) and never count as a
time or a recorded figure."""

from __future__ import annotations

from reportgen.rule_outputs import recorded_command, time_problems

HUGE = 10**400


def test_a_400_digit_job_time_is_no_time_and_raises_nothing():
    assert time_problems({"job_start": HUGE, "job_end": 5}) == []
    assert time_problems({"job_start": 1.7e9, "job_end": 1.7e9 + 60,
                          "step_num": {"first": HUGE, "last": 1.7e15}}) == []
    assert time_problems({"job_start": float("nan"), "job_end": 5}) == []


def test_real_problems_are_still_found():
    assert time_problems({"job_start": 10, "job_end": 5}) == [
        "job_start 10 is after job_end 5; the job's duration is shown as unknown"]
    assert time_problems({"job_start": 1.7e12, "job_end": 1.7e12 + 60})[0].startswith("job_start 1700000000000.0")


def test_a_recording_summary_with_a_400_digit_figure_is_no_summary():
    good = {"job_cpu_pct_of_host": 12.5, "host_cpu_pct": 80.0, "job_cpu_s": 30, "cpu_cores": 2,
            "job_rss_peak_bytes": 2**30, "host_shared": True, "job_cpu_pct_of_host_p95": 20}
    assert recorded_command(good) == {"job_cpu_pct_of_host": 12.5, "host_cpu_pct": 80.0, "job_cpu_s": 30.0,
                                      "cpu_cores": 2, "job_rss_peak_bytes": 2**30, "host_shared": True,
                                      "job_cpu_pct_of_host_p50": None, "job_cpu_pct_of_host_p95": 20.0}
    assert recorded_command({**good, "job_rss_peak_bytes": HUGE}) is None
    assert recorded_command({**good, "job_cpu_pct_of_host_p50": HUGE})["job_cpu_pct_of_host_p50"] is None
    assert recorded_command({**good, "host_shared": 1}) is None
