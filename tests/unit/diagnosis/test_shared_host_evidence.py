"""The diagnosis' evidence from a recording's summary (recording.json): the command's own CPU on a shared host,
and never an exception on a damaged summary (a folder of rule outputs is input too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.diagnosis import diagnose
from reportgen.diagnosis.evidence import NodeSeries, gather
from reportgen.rule_outputs import RuleOutputs

SHARED = {"job_cpu_pct_of_host": 12.5, "job_cpu_pct_of_host_p50": 11.0, "job_cpu_pct_of_host_p95": 30.0,
          "host_cpu_pct": 96.0, "job_cpu_s": 40.0, "cpu_cores": 4, "job_rss_peak_bytes": 10**9, "host_shared": True}


def outputs(recording) -> RuleOutputs:
    return RuleOutputs(folder=Path("."), recording=recording)


def test_a_shared_host_gives_the_commands_own_cpu_and_sets_the_hosts_per_core_load_aside():
    ev = gather(outputs(SHARED))
    assert ev.job_cpu == {"mean": 12.5, "p50": 11.0, "p95": 30.0, "host": 96.0, "rss_peak_bytes": 10**9}
    assert ev.cpu_stat("p95") == 30.0 and ev.cpu_stat("p50") == 11.0
    ev.series = {"algo-1": NodeSeries(cores=[99.0, 2.0, 1.0, 3.0], cpu_total=26.0)}  # a neighbour's busy core
    ev.timeline_s = 120.0
    assert ev.busy_cores(70.0) == (0, 0, None, None) and ev.loop_cpu_pct() == 12.5
    (said,) = [n for n in ev.not_judged if "shared with other work" in n]
    assert "its CPU 96 %" in said and "command's own 12 %" in said


def test_a_host_that_is_not_shared_keeps_the_hosts_figures():
    ev = gather(outputs({**SHARED, "host_shared": False}))
    ev.series = {"algo-1": NodeSeries(cores=[99.0, 2.0, 1.0, 3.0], cpu_total=26.0)}
    ev.timeline_s = 120.0
    assert ev.job_cpu is None and ev.busy_cores(70.0)[:2] == (1, 4) and ev.loop_cpu_pct() == 26.0


@pytest.mark.parametrize("damage", [
    {"job_cpu_pct_of_host": "12"}, {"host_cpu_pct": float("nan")}, {"cpu_cores": 10**400}, {"host_shared": "yes"},
    {"job_cpu_pct_of_host_p95": None}, {"job_cpu_pct_of_host_p50": [1]}, {"job_cpu_s": True},
    {"job_run_queue_pct_of_host": "20"}, {"job_run_queue_s": float("inf"), "job_run_queue_pct_of_host": [1]}])
def test_a_damaged_summary_never_raises(damage):
    recording = {**SHARED, **damage}
    ev = gather(outputs(recording))
    required = ("job_cpu_pct_of_host", "host_cpu_pct", "job_cpu_s", "cpu_cores", "host_shared")
    if any(k in damage for k in required):
        assert ev.job_cpu is None  # the command's figures are unusable: the host's stay
    else:
        assert ev.job_cpu is not None and ev.job_cpu["mean"] == 12.5
    assert ev.job_run_queue is None  # absent, or no number: no run-queue account
    diagnose(outputs(recording))  # and the whole diagnosis runs


@pytest.mark.parametrize("recording", [None, [], "text", {}, {"host_shared": True}])
def test_no_or_odd_summary_is_no_recording(recording):
    assert gather(outputs(recording)).job_cpu is None


def test_host_memory_growth_on_a_shared_host_says_whose_memory_it_is():
    from reportgen.diagnosis.causes import host_memory_growth

    rising = [(float(t), 20.0 + t / 10) for t in range(0, 600, 5)]  # +6 points a minute, a perfect fit
    for recording, said in ((SHARED, True), ({**SHARED, "host_shared": False}, False)):
        ev = gather(outputs(recording))
        ev.series = {"algo-1": NodeSeries(host_memory=rising)}
        ev.timeline_s = ev.loop_s = 600.0
        finding = host_memory_growth(ev, {})
        assert finding is not None and finding.cause == "host-memory-growth"
        shared = [e for e in finding.evidence if "the host was shared" in e]
        assert shared == (["the host was shared with other work, whose memory this counts too; the recorded "
                           "command's own processes peaked at 1000 MB"] if said else [])


LOW = {**SHARED, "job_cpu_pct_of_host": 5.0}  # 0.2 of a core of 4


def _loading(recording, host_cores=4):
    from reportgen.diagnosis.loading_cpu import loading_cpu

    ev = gather(outputs(recording))
    ev.series = {"algo-1": NodeSeries(cores=[99.0] * host_cores, cpu_total=99.0)}
    ev.cores, ev.timeline_s = host_cores, 120.0
    return loading_cpu(ev, 0.8)


def test_a_starved_loader_and_a_waiting_one_are_told_apart_by_the_run_queue():
    """Both used 0.2 of a core of 4 (5 %) on a saturated host while loading took 80 % of each step, under the
    0.6 of a core that CPU loading asks (the rest of the step, 0.2, and half a core through the loading's 0.8);
    the scheduler's run queue says which asked for more."""
    from reportgen.diagnosis.loading_cpu import COMPUTES, WAITS

    starved = _loading({**LOW, "job_run_queue_s": 90.0, "job_run_queue_pct_of_host": 20.0})
    assert (starved.reading, starved.used, starved.queued) == (COMPUTES, 0.2, 0.8) and starved.by_run_queue
    said = starved.evidence("")
    assert "CPU work starved of cores" in said and "used 0.20 of a core" in said and "waited 0.80 of a core" in said
    waiting = _loading({**LOW, "job_run_queue_s": 4.5, "job_run_queue_pct_of_host": 1.0})
    assert (waiting.reading, waiting.used, waiting.queued) == (WAITS, 0.2, 0.04)
    assert waiting.asked == pytest.approx(0.24) and waiting.by_run_queue  # its CPU alone said so too
    # a summary without the command's ticks (job_usage): its means over the whole recording, and said so
    assert waiting.evidence("") == (
        "the loading mostly waits, on I/O, not on the cores: the training process used 0.20 of a core over the whole "
        "recording, its start-up included (the analysis kept no tick-by-tick figures of the command to read the "
        "loop's alone) and waited 0.04 of a core runnable for one (the scheduler's run queue) while loading took 80 % "
        "of each step: it asked for 0.24 of a core, the rest of the step up to 0.20 of it")
    assert waiting.metrics() == {"reading": "waits", "loading_step_share": 0.8, "used_cores": 0.2,
                                 "run_queue_cores": 0.04, "host_free_cores": None, "window": "recording"}


def test_the_loops_own_cpu_and_run_queue_replace_the_whole_recordings():
    """With the command's ticks kept (job_usage) and a loop known, the CPU it used and waited for are the loop's: a
    process that started up alone on its cores (1 core used, no wait, 20 s) and then loaded starved of them (0.2 used,
    0.8 waited, 100 s) reads 0.2 and 0.8 over the loop, where the whole recording's means (0.33, 0.67) would have
    mixed its start-up in."""
    from reportgen.job_usage import usage_rows
    from reportgen.diagnosis.loading_cpu import COMPUTES

    ticks = [{"Timestamp": 1000.0 + i, "CPUCores": 1.0 if i <= 20 else 0.2, "RunQueueCores": 0.0 if i <= 20 else 0.8}
             for i in range(121)]
    recording = {**SHARED, "job_cpu_pct_of_host": 100 * (20 + 20) / 120 / 4, "job_usage": usage_rows(ticks)}
    ev = gather(outputs(recording))
    ev.loop = (1020.0, 1120.0)
    ev.export_spans = [(1060.0, 1070.0)]  # the profiler's export: left out too
    from reportgen.diagnosis.evidence import loop_job_usage

    loop_job_usage(ev, recording, 4)
    ev.series = {"algo-1": NodeSeries(cores=[99.0] * 4, cpu_total=99.0)}
    ev.cores, ev.timeline_s = 4, 120.0
    assert ev.loop_cpu_pct() == pytest.approx(100 * 0.2 / 4) and ev.loop_run_queue_pct() == pytest.approx(100 * 0.8 / 4)
    from reportgen.diagnosis.loading_cpu import loading_cpu

    reading = loading_cpu(ev, 0.8)
    assert (reading.reading, reading.used, reading.queued) == (COMPUTES, pytest.approx(0.2), pytest.approx(0.8))
    assert "used 0.20 of a core over the loop" in reading.evidence("") and reading.metrics()["window"] == "loop"


def test_without_a_run_queue_a_saturated_host_leaves_the_question_open():
    """No run-queue account (recordings before it): with the host's cores all busy (96 % of 4: 0.16 free) the
    little CPU may be starvation; with cores to spare it was waiting; a process that used enough CPU computes."""
    from reportgen.diagnosis.loading_cpu import COMPUTES, OPEN, WAITS

    unknown = _loading(LOW)
    assert (unknown.reading, unknown.queued) == (OPEN, None) and unknown.free == pytest.approx(0.16)
    assert "is open" in unknown.evidence("") and "0.16 of a core free" in unknown.evidence("")
    spare = _loading({**LOW, "host_cpu_pct": 60.0})
    assert (spare.reading, spare.free) == (WAITS, pytest.approx(1.6))
    busy = _loading({**SHARED, "job_cpu_pct_of_host": 15.0})  # 0.6 of a core: as much as CPU loading asks
    assert (busy.reading, busy.used) == (COMPUTES, pytest.approx(0.6)) and busy.evidence("") == ""
    assert _loading(SHARED).reading == WAITS  # 0.5 used, 0.16 free: it could have had more, so it waited
    own = _loading({**LOW, "host_shared": False})  # a host of its own: the host's CPU is the job's
    assert own.reading == COMPUTES and own.used == pytest.approx(3.96)


def test_a_recording_shorter_than_the_timeline_floor_gives_no_reading():
    from reportgen.diagnosis.loading_cpu import loading_cpu

    ev = gather(outputs({**SHARED, "job_run_queue_s": 90.0, "job_run_queue_pct_of_host": 20.0}))
    ev.series = {"algo-1": NodeSeries(cores=[99.0] * 4, cpu_total=99.0)}
    ev.cores, ev.timeline_s = 4, 40.0
    assert ev.loop_run_queue_pct() is None and loading_cpu(ev, 0.8) is None


def test_the_loops_own_cpu_needs_no_minute_of_timeline_the_recordings_mean_does():
    """The command's own CPU over the loop is its exact CPU time over the loop's ticks (job_usage): a 30 s loop
    (the runs judged from 10 s) reads it, where the whole recording's mean, start-up mixed in, still waits for a
    minute of timeline; the run queue follows the same window."""
    from reportgen.diagnosis.evidence import loop_job_usage
    from reportgen.job_usage import usage_rows

    ticks = [{"Timestamp": 1000.0 + i, "CPUCores": 1.7, "RunQueueCores": 0.1} for i in range(41)]
    recording = {**SHARED, "cpu_cores": 2, "job_usage": usage_rows(ticks)}
    ev = gather(outputs(recording))
    ev.loop = (1005.0, 1035.0)
    loop_job_usage(ev, recording, 2)
    ev.series = {"algo-1": NodeSeries(cores=[99.0] * 2, cpu_total=99.0)}
    ev.cores, ev.timeline_s = 2, 40.0  # under a minute
    assert ev.loop_cpu_pct() == pytest.approx(100 * 1.7 / 2) and ev.loop_run_queue_pct() == pytest.approx(100 * 0.1 / 2)
    whole = gather(outputs(SHARED))  # no ticks kept: the recording's mean only
    whole.series, whole.timeline_s = {"algo-1": NodeSeries(cores=[99.0] * 4, cpu_total=99.0)}, 40.0
    assert whole.job_cpu_loop is None and whole.loop_cpu_pct() is None and whole.loop_run_queue_pct() is None
    whole.timeline_s = 60.0
    assert whole.loop_cpu_pct() == 12.5


def test_threads_that_ask_for_every_core_leave_none_for_the_loading():
    """A process that used 1.25 of 2 cores and waited 1.92 more on the run queue (tf-noprefetch-map's loop): its
    threads ask for every core, so more loading threads add work to the same cores; one that asked for 1.5 of 2
    leaves half a core (the overlap's bounds apply); without a run-queue account nothing is said."""
    from reportgen.diagnosis.causes import cores_asked

    recording = {**SHARED, "cpu_cores": 2, "job_cpu_pct_of_host": 62.5, "job_run_queue_s": 20.0,
                 "job_run_queue_pct_of_host": 96.0}
    ev = gather(outputs(recording))
    ev.cores, ev.timeline_s = 2, 120.0
    ev.series = {"algo-1": NodeSeries(cores=[99.0] * 2, cpu_total=99.0)}
    assert cores_asked(ev) == (pytest.approx(1.25), pytest.approx(1.92))
    ev = gather(outputs({**recording, "job_run_queue_pct_of_host": 12.5}))
    ev.cores, ev.timeline_s = 2, 120.0
    ev.series = {"algo-1": NodeSeries(cores=[99.0] * 2, cpu_total=99.0)}
    assert cores_asked(ev) is None
    ev = gather(outputs({**SHARED, "cpu_cores": 2, "job_cpu_pct_of_host": 62.5}))
    ev.cores, ev.timeline_s = 2, 120.0
    ev.series = {"algo-1": NodeSeries(cores=[99.0] * 2, cpu_total=99.0)}
    assert ev.loop_run_queue_pct() is None and cores_asked(ev) is None
