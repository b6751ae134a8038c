"""A straggler among SageMaker processes told and priced from their step-time accounts (diagnosis/straggler_account.py):
by the collectives they wait in when the accounts hold them, else by their steps; the price is what evening it out
saves: the whole gap when a fix removes the extra time, (n-1)/n of it when the extra is compute (work)."""

from __future__ import annotations

import pytest

from reportgen.diagnosis import diagnose
from reportgen.diagnosis.evidence import gather
from reportgen.diagnosis.slow_step_story import FRAMEWORK_TITLES, SLICE_TITLES
from reportgen.diagnosis.straggler_account import lock_step_straggler, process_straggler, rank_saving
from reportgen.rule_outputs import RuleOutputs
from reportgen.trace_ranks import FrameworkAccounts, TraceAccount

STEPS = 40


def _account(**per_step: float) -> TraceAccount:
    """An account of STEPS equal steps with the given ms per step per slice (one slow step added to compute, so
    means and medians differ: the process straggler reads medians)."""
    per = {name: [ms] * STEPS for name, ms in per_step.items()}
    per["compute"][0] += 5000.0  # a slow step: the slow steps' finding, never a straggler
    slices = {name: sum(values) for name, values in per.items()}
    return TraceAccount("host", STEPS, sum(slices.values()), slices, {n: tuple(v) for n, v in per.items()})


def test_the_process_others_wait_for_in_collectives_is_the_straggler():
    """Lock step: equal steps, three processes wait 100 ms a step in exposed communication, one 10 ms, which waits
    instead 95 ms longer for data before its step. The gap is the others' wait beyond its own, of its step, all of
    it saved (a wait for data a fix removes)."""
    accounts = {f"algo-{i}-27": _account(compute=300.0, data_wait=10.0, communication=100.0) for i in (1, 2, 3)}
    accounts["algo-4-27"] = _account(compute=300.0, data_wait=105.0, communication=10.0, no_operator=5.0)
    found = process_straggler(accounts, FRAMEWORK_TITLES)
    assert found is not None and found.who == "algo-4-27" and found.method == "collective wait"
    assert found.slower_in == "data_wait" and (found.its_slice_ms, found.others_slice_ms) == (105.0, 10.0)
    assert found.gap_share == pytest.approx(90.0 / 420.0)
    assert found.evened.share == pytest.approx(90.0 / 420.0)
    assert "slower in waiting for data, which a fix removes" in found.evened.why


def test_a_process_slower_in_compute_saves_n_minus_one_over_n_of_the_gap():
    """No collectives: three processes at 310 ms a step, one at 430 ms in its passes: evened out over the four
    processes each takes a quarter of the 120 ms, so three quarters of the gap is saved."""
    accounts = {f"algo-{i}-27": _account(compute=300.0, data_wait=10.0) for i in (1, 2, 3)}
    accounts["algo-4-27"] = _account(compute=420.0, data_wait=10.0)
    found = process_straggler(accounts, FRAMEWORK_TITLES)
    assert found is not None and found.who == "algo-4-27" and found.method == "step time"
    assert (found.its_ms, found.others_ms) == (430.0, 310.0) and found.slower_in == "compute"
    assert found.gap_share == pytest.approx(120.0 / 430.0)
    assert found.evened.share == pytest.approx(120.0 / 430.0 * 3 / 4)
    assert "evened out over the 4 processes, each takes 1/4 of it, so 75 % of that wait is saved" in found.evened.why


def test_no_straggler_within_the_margin_or_alone():
    """9 % apart is no straggler (10 %); one process has no one to be compared with; one slow step never makes one."""
    accounts = {"algo-1-27": _account(compute=300.0), "algo-2-27": _account(compute=327.0)}
    assert process_straggler(accounts, FRAMEWORK_TITLES) is None
    assert process_straggler({"algo-1-27": _account(compute=300.0)}, FRAMEWORK_TITLES) is None


def test_a_trace_rank_is_priced_by_the_others_exposed_communication():
    """Trace ranks (rank_saving, the same pricing): the others' exposed communication beyond the straggler's own;
    slower in compute, half of it for two ranks."""
    accounts = {"0": _account(compute=300.0, communication=120.0), "1": _account(compute=420.0)}
    saved = rank_saving(accounts, "1")
    exposed = accounts["0"].share("communication")
    assert saved is not None and saved.slower_in == "compute"
    assert saved.share == pytest.approx(exposed / 2)
    assert saved.why.startswith(f"the other ranks wait for it {exposed * 100:.0f} % of their step in exposed "
                                "communication; it is slower in compute")
    assert rank_saving(accounts, "0") is None  # the others wait less than it does: nothing to even out


def test_damaged_process_accounts_give_no_traceback_and_no_invented_straggler(tmp_path):
    """framework-account.json whose per-step lists have other lengths than its steps, or text where lists belong:
    the diagnosis still runs, and neither a straggler nor slow steps are made of lists that cannot be added up."""
    good = {"steps": 30, "step_ms": 9000.0, "slices_ms": {"compute": 9000.0}, "per_step_ms": {"compute": [300.0] * 30}}
    # steps of 300 ms plus a data wait listed for only some of them: added up, 20 (or 3) steps of 1200 ms
    bait = {**good, "per_step_ms": {"compute": [300.0] * 30, "data_wait": [900.0] * 20}}
    slow = {**good, "per_step_ms": {"compute": [300.0] * 30, "data_wait": [900.0] * 3}}
    odd = {**good, "per_step_ms": {"compute": "300"}, "steps": "30"}
    numbers = [str(i) for i in range(30)]
    doc = {"nodes": {"algo-1-27": {"account": good, "steps": numbers}, "algo-2-27": {"account": bait, "steps": numbers},
                     "algo-3-27": {"account": slow, "steps": numbers}, "algo-4-27": {"account": odd, "steps": numbers}}}
    accounts = FrameworkAccounts.of(doc).nodes
    assert sorted(accounts) == ["algo-1-27", "algo-2-27", "algo-3-27"]  # algo-4's is unreadable: dropped by the view
    assert [a.per_step_whole for a in accounts.values()] == [True, False, False]
    assert process_straggler(accounts, FRAMEWORK_TITLES) is None
    outputs = RuleOutputs(folder=tmp_path, framework_account=doc)
    assert sorted(gather(outputs).slow_steps) == ["algo-1-27"]  # 30 steps of 300 ms: judged, none slow
    assert gather(outputs).slow_steps["algo-1-27"].count == 0
    diagnose(outputs)  # and the whole diagnosis runs


def test_a_trace_straggler_whose_wait_overlaps_compute_is_held_to_the_exposed_communication(tmp_path):
    """The ranks' collective wait tells the straggler (rank 2 loads slowly; the others wait 65 % of their step in
    all-reduces, it 4 %). Where the accounts show the others' wait overlapped with their compute (moved here from
    their communication slice to compute, 95 % of it, as on a GPU whose all-reduces run beside backward), no more of
    it is exposed than the straggler's own: evening it out saves nothing measurable, and the finding is priced so,
    not at the others' longer wait in collectives (61 % of their step, which priced it before): Data quality says
    which evidence was set aside."""
    from testdata.kineto_synthetic import KinetoSet, write_set
    from reportgen.trace_analysis.outputs import analyze_job
    from tests.unit.diagnosis.test_diagnosis import outputs

    write_set(KinetoSet(ranks=3, mb=1.0, seed=5, cycles=2, straggler=2, straggler_ms=40.0, layers=2), tmp_path)
    doc, _ = analyze_job(sorted(p for p in tmp_path.rglob("*") if ".pt.trace.json" in p.name))
    (before,) = [f for f in diagnose(outputs(kineto=doc)).findings if f.cause == "straggler"]
    for label in ("0", "1"):
        account = doc["ranks"][label]["account"]
        per_step = account["per_step_ms"]
        moved = [0.95 * ms for ms in per_step["communication"]]
        per_step["communication"] = [ms - m for ms, m in zip(per_step["communication"], moved)]
        per_step["compute"] = [ms + m for ms, m in zip(per_step["compute"], moved)]
        account["slices_ms"]["communication"] -= sum(moved)
        account["slices_ms"]["compute"] += sum(moved)
    diagnosis = diagnose(outputs(kineto=doc))
    (finding,) = [f for f in diagnosis.findings if f.cause == "straggler"]
    ranks = {label: rank.account for label, rank in diagnosis.evidence.trace_ranks.items()}
    others = (ranks["0"].share("communication") + ranks["1"].share("communication")) / 2  # their median
    assert others < ranks["2"].share("communication")  # nothing exposed beyond the straggler's own
    assert before.share == pytest.approx(0.606, abs=0.01)  # exposed before the move: the whole gap
    assert finding.share == 0.0 and not finding.counts and finding.metrics["who"] == "rank 2"
    assert any("the impact is held to that, not the 61 % of their step" in e for e in finding.evidence)
    (note,) = diagnosis.quality_notes
    assert note.startswith("straggler: the ranks' collective wait puts the others waiting for rank 2 61 % of their "
                           "step longer than it, but the step-time accounts show only 0 %")


def test_in_lock_step_without_collectives_the_worker_with_the_most_work_is_the_straggler():
    """Lock step, no collective in the accounts (DDP's all-reduce is not in SageMaker's framework events): every step
    takes 450 ms, but algo-1's passes take 420 ms of it and the other three's 300, who then wait 150 ms under no
    operator at the step's end. algo-1 is the straggler, slower in compute (work): evened out over the four processes
    each takes a quarter of the 120 ms gap, three quarters of it saved."""
    accounts = {f"algo-{i}-27": _account(compute=300.0, data_wait=10.0, no_operator=140.0) for i in (2, 3, 4)}
    accounts["algo-1-27"] = _account(compute=420.0, data_wait=10.0, no_operator=20.0)
    found = process_straggler(accounts, FRAMEWORK_TITLES)
    assert found is not None and found.who == "algo-1-27" and found.method == "busy time"
    assert (found.its_ms, found.others_ms) == (430.0, 310.0) and found.slower_in == "compute"
    assert (found.its_slice_ms, found.others_slice_ms) == (420.0, 300.0)
    assert found.gap_share == pytest.approx(120.0 / 450.0)
    assert found.evened.share == pytest.approx(120.0 / 450.0 * 3 / 4)
    # the same accounts as trace ranks: the same straggler and price
    ranks = lock_step_straggler({str(i): a for i, a in enumerate(accounts.values())}, SLICE_TITLES, "ranks")
    assert ranks is not None and ranks.who == "3" and ranks.evened.share == pytest.approx(found.evened.share)
    assert "evened out over the 4 ranks" in ranks.evened.why


def test_a_lock_step_straggler_slower_in_waiting_for_data_costs_the_whole_gap():
    """Two processes in lock step (400 ms steps): algo-2 waits 150 ms for each batch and computes 250 ms; algo-1 waits
    20 ms, computes 300 ms, then waits 80 ms under no operator for algo-2. algo-2 works 80 ms more a step, slower in
    waiting for data: a fix removes the wait, the whole gap is saved (of the step)."""
    accounts = {"algo-1-27": _account(compute=300.0, data_wait=20.0, no_operator=80.0),
                "algo-2-27": _account(compute=250.0, data_wait=150.0)}
    found = process_straggler(accounts, FRAMEWORK_TITLES)
    assert found is not None and found.who == "algo-2-27" and found.slower_in == "data_wait"
    assert found.gap_share == pytest.approx((400.0 - 320.0) / 400.0)
    assert found.evened.share == pytest.approx(found.gap_share)


@pytest.mark.parametrize("accounts", [
    # balanced: equal steps, equal work
    {f"algo-{i}-27": _account(compute=300.0, data_wait=10.0, no_operator=40.0) for i in (1, 2)},
    # equal steps, work 9 % of the step apart: within the margin
    {"algo-1-27": _account(compute=300.0, no_operator=100.0), "algo-2-27": _account(compute=336.0, no_operator=64.0)},
    # one process: no one to wait for it
    {"algo-1-27": _account(compute=420.0, no_operator=20.0)},
])
def test_no_lock_step_straggler_for_balanced_work_or_one_worker(accounts):
    assert process_straggler(accounts, FRAMEWORK_TITLES) is None
    assert lock_step_straggler(accounts, FRAMEWORK_TITLES, "processes") is None


def test_a_real_ddp_pair_without_its_collectives_still_tells_its_straggler(tmp_path):
    """torch-cpu-record-ddp2 (two real CPU ranks over gloo): rank 0 loads slowly and rank 1 waits for it in the
    all-reduce, so the traces' collective wait names rank 0. The same accounts with every collective's time moved
    under no operator (as where the collectives are not recorded) and the comparison taken away: the steps stay in
    lock step, and the account alone names rank 0, slower in waiting for data, priced at the whole gap (a fix removes
    a wait) computed from the accounts' medians."""
    import statistics

    from reportgen.trace_analysis.outputs import analyze_job
    from tests.support.paths import RAW, need
    from tests.unit.diagnosis.test_diagnosis import outputs

    folder = need(RAW / "torch-cpu-record-ddp2")
    doc, _ = analyze_job(sorted(p for p in folder.rglob("*") if ".pt.trace.json" in p.name))
    (before,) = [f for f in diagnose(outputs(kineto=doc)).findings if f.cause == "straggler"]
    assert before.metrics["who"] == "rank 0"  # told by the collectives
    for rank in doc["ranks"].values():
        account = rank["account"]
        per_step, slices = account["per_step_ms"], account["slices_ms"]
        per_step["no_operator"] = [a + b for a, b in zip(per_step["no_operator"], per_step["communication"])]
        per_step["communication"] = [0.0] * len(per_step["communication"])
        slices["no_operator"] += slices["communication"]
        slices["communication"] = 0.0
    doc.pop("comparison", None)
    diagnosis = diagnose(outputs(kineto=doc))
    (finding,) = [f for f in diagnosis.findings if f.cause == "straggler"]
    assert finding.metrics["who"] == "rank 0" and finding.metrics["method"] == "busy time"
    assert finding.metrics["slower_in"] == "data_wait"
    accounts = {label: rank.account for label, rank in diagnosis.evidence.trace_ranks.items()}
    steps = {label: statistics.median(a.step_durations_ms()) for label, a in accounts.items()}
    work = {label: steps[label] - statistics.median(a.per_step_ms["no_operator"]) for label, a in accounts.items()}
    assert max(steps.values()) / min(steps.values()) < 1.10  # lock step
    assert finding.metrics["gap_share"] == pytest.approx((work["0"] - work["1"]) / steps["0"])
    assert finding.loop_share == pytest.approx(finding.metrics["gap_share"])  # the whole gap: a wait, removed
    assert any("the ranks run in lock step" in e for e in finding.evidence)
