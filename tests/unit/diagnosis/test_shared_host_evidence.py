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
    {"job_cpu_pct_of_host_p95": None}, {"job_cpu_pct_of_host_p50": [1]}, {"job_cpu_s": True}])
def test_a_damaged_summary_never_raises(damage):
    recording = {**SHARED, **damage}
    ev = gather(outputs(recording))
    required = ("job_cpu_pct_of_host", "host_cpu_pct", "job_cpu_s", "cpu_cores", "host_shared")
    if any(k in damage for k in required):
        assert ev.job_cpu is None  # the command's figures are unusable: the host's stay
    else:
        assert ev.job_cpu is not None and ev.job_cpu["mean"] == 12.5
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
