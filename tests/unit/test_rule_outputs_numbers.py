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


def test_job_times_view_reads_the_times_once_for_every_room():
    from reportgen.rule_outputs import JobTimes
    from reportgen.report.sections.summary import compute

    good = {"job_start": 1_700_000_000, "job_end": 1_700_000_600,
            "step_num": {"first": 1_700_000_030 * 10**6, "last": 1_700_000_590 * 10**6}}
    times = JobTimes.of(good)
    assert (times.start_s, times.end_s, times.job_known, times.steps_known) == (1_700_000_000, 1_700_000_600, True, True)
    assert isinstance(times.start_s, int)  # kept as given: the summary shows it exactly
    assert compute(good)["initialization_s"] == 30 and compute(good)["job_duration_s"] == 600
    huge = {**good, "job_start": HUGE}
    assert JobTimes.of(huge).start_s is None and not JobTimes.of(huge).job_known and compute(huge) is None
    steps_late = {**good, "step_num": {"first": 1.8e15, "last": 1.9e15}}  # steps a day past the job
    assert JobTimes.of(steps_late).job_known and not JobTimes.of(steps_late).steps_known
    assert "training_loop_start" not in compute(steps_late)
    assert JobTimes.of(None) == JobTimes() and not JobTimes.of("nonsense").job_known


def test_outlier_steps_view_keeps_order_and_drops_what_is_no_duration():
    from reportgen.rule_outputs import OutlierStep, outlier_steps_of

    details = {"step_details": {
        "algo-1": {"step_stats": {"p50": 0.5}, "outliers": [
            {"step": 40, "start_s": 1.7e9, "duration_s": 2.5}, {"step": 41, "duration_s": HUGE},
            {"step": 60, "duration_s": 1}, "nonsense"]},
        "algo-2": {"step_stats": {"p50": True}, "outliers": [{"step": "7", "start_s": "x", "duration_s": 0.9}]},
        "algo-3": "nonsense"}}
    assert outlier_steps_of(details) == [OutlierStep("algo-1", "40", 2.5, 1.7e9, 0.5),
                                         OutlierStep("algo-1", "60", 1.0, None, 0.5),
                                         OutlierStep("algo-2", "7", 0.9, None, None)]
    assert outlier_steps_of(None) == [] and outlier_steps_of({"step_details": []}) == []


def test_profiler_exports_span_from_the_handlers_stamp_to_the_files_last_write():
    from reportgen.rule_outputs import profiler_exports

    recording = {"traces_written_s": {
        "pytorch-traces/vm_12099.1796613477973794101.pt.trace.json.gz": 1796613478.5562704,  # a real pair: 0.582 s
        "pytorch-traces/other.json": 1796613480.0,  # no time stamp in the name: not torch's handler
        "pytorch-traces/vm_1.1796613490000000000.pt.trace.json": 1796613480.0,  # written before its stamp
        "pytorch-traces/vm_2.1796613490000000000.pt.trace.json": float("nan"),
        "pytorch-traces/vm_3.1796613490000000000.pt.trace.json": 10 ** 400}}
    assert profiler_exports(recording) == [(1796613477.9737941, 1796613478.5562704)]
    assert profiler_exports({"traces_written_s": ["x"]}) == [] and profiler_exports(None) == []


def test_the_scripts_end_is_a_finite_number_or_none():
    from reportgen.rule_outputs import recorded_script_end

    assert recorded_script_end({"script_end_s": 1796655491.3225787}) == 1796655491.3225787
    for bad in ({"script_end_s": None}, {"script_end_s": "1796655491"}, {"script_end_s": float("nan")},
                {"script_end_s": 10 ** 400}, {}, None, ["script_end_s"]):
        assert recorded_script_end(bad) is None, bad


def test_the_profilers_export_is_left_out_of_the_training_loop():
    """A recording's loop runs from the first traced event to the job's end; the export inside it is not training."""
    from pathlib import Path

    from reportgen.diagnosis.evidence import Evidence, leave_out_profiler_export
    from reportgen.rule_outputs import RuleOutputs

    outputs = RuleOutputs(folder=Path("."))
    outputs.recording = {"traces_written_s": {"t/vm_1.1000000010000000000.pt.trace.json": 1000000010.5,
                                              "t/vm_1.1000000200000000000.pt.trace.json": 1000000200.5}}
    ev = Evidence(rules={})
    ev.loop, ev.loop_s = (1000000000.0, 1000000100.0), 100.0  # the second export is after the loop
    leave_out_profiler_export(ev, outputs)
    assert ev.profiler_export_s == 0.5 and ev.loop_s == 99.5
