"""compare's CPU operators per profiled step with several ranks: from kineto.json's exact job-wide table,
checked against a brute-force sum over every event of every rank; the per-rank top-15 sum only for a
kineto.json without it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reportgen.compare.traces import operators_blocks, summarize
from reportgen.trace_analysis import analyze_job, find_traces
from tests.support.trace_sets import write_trace

COMMON = [f"aten::common{k:02d}" for k in range(16)]  # 16 operators every rank runs, 84-99 µs each
RARE = "aten::rare"
# rank -> (profiled steps, µs of aten::rare per step): 200 µs puts it first in rank 0's top 15; 80 µs leaves
# it out of ranks 1's and 2's (all 16 common operators are longer), yet over the job it is the most
# expensive operator. Rank 2 profiled fewer steps.
RANKS = {0: (3, 200.0), 1: (3, 80.0), 2: (2, 80.0)}


def _rank_events(rank: int, steps: int, rare_us: float) -> list[dict]:
    out, t = [], 1.7e15 + 10 * rank
    for i in range(steps):
        out.append({"ph": "X", "cat": "cpu_op", "name": f"ProfilerStep#{i + 1}", "ts": t, "dur": 3000.0,
                    "pid": 1, "tid": 1})
        at = t + 5
        for k, name in enumerate(COMMON):
            dur = 99.0 - k + 0.25 * rank + 0.125 * i
            out.append({"ph": "X", "cat": "cpu_op", "name": name, "ts": at, "dur": dur, "pid": 1, "tid": 1})
            at += dur + 1
        out.append({"ph": "X", "cat": "cpu_op", "name": RARE, "ts": at, "dur": rare_us, "pid": 1, "tid": 1})
        t += 3100.0
    return out


def _write_job(folder: Path) -> list[list[dict]]:
    events = []
    for rank, (steps, rare_us) in RANKS.items():
        events.append(_rank_events(rank, steps, rare_us))
        write_trace(folder / f"node0_{100 + rank}.{1700000000000000000 + rank}.pt.trace.json", events[-1], rank=rank)
    return events


def _brute_force_ms_per_step(events: list[list[dict]]) -> dict[str, float]:
    """Every CPU operator event of every rank summed by name (ms) ÷ every rank's profiled steps."""
    totals: dict[str, float] = {}
    for rank in events:
        for e in rank:
            if e["cat"] == "cpu_op" and not re.match(r"ProfilerStep#\d+$", e["name"]):
                totals[e["name"]] = totals.get(e["name"], 0.0) + e["dur"] / 1000.0
    steps = sum(s for s, _ in RANKS.values())
    return {name: total / steps for name, total in totals.items()}


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    folder = tmp_path_factory.mktemp("three-ranks")
    events = _write_job(folder)
    doc, problems = analyze_job(find_traces(folder))
    assert problems.total == 0 and sorted(doc["ranks"]) == ["0", "1", "2"]
    return doc, _brute_force_ms_per_step(events)


def test_the_planted_operator_is_in_one_ranks_top_15_only(job):
    doc, _ = job
    in_top = {label: RARE in [o["name"] for o in r["cpu_ops"]["top"]] for label, r in doc["ranks"].items()}
    assert in_top == {"0": True, "1": False, "2": False}
    assert [len(r["steps"]) for r in doc["ranks"].values()] == [3, 3, 2]


def test_multi_rank_operators_per_step_are_the_brute_force_sum(job):
    doc, brute = job
    summary = summarize(doc, 60)
    assert summary.op_ms_per_step_exact is True
    ops = summary.op_ms_per_step
    # The job-wide top 15: aten::rare (1.0 ms over the job, first) and the 14 longest common operators.
    assert set(ops) == {RARE, *COMMON[:14]}
    for name, value in ops.items():
        assert value == pytest.approx(brute[name], rel=1e-12), name
    assert ops[RARE] == pytest.approx((3 * 200 + 3 * 80 + 2 * 80) / 1000 / 8, rel=1e-12)  # 0.125 ms per step
    assert max(ops, key=ops.get) == RARE


def test_without_the_job_table_the_per_rank_top_15_sum_is_kept_and_flagged(job):
    doc, brute = job
    old = summarize({k: v for k, v in doc.items() if k != "job"}, 60)
    assert old.op_ms_per_step_exact is False
    # Only rank 0's aten::rare is counted: 0.6 ms / 3 steps / 3 ranks, below every common operator's, so
    # the job's most expensive operator fell out of the comparison's top 10.
    ops = old.op_ms_per_step
    assert ops[RARE] == pytest.approx(0.6 / 3 / 3, rel=1e-12) and ops[RARE] < brute[RARE]
    assert RARE not in sorted(ops, key=ops.get, reverse=True)[:10]
    blocks, _ = operators_blocks(old, summarize(doc, 60))
    text = " ".join(getattr(b, "text", "") for b in blocks)
    assert "A's operator times add up each rank's own top 15" in text and "B's operator times" not in text
    assert "all ranks' time ÷ all ranks' profiled steps" in text


def test_a_rank_without_steps_falls_back_to_the_per_rank_sum(job):
    """The job table also counts a rank without profiled steps, whose steps the divisor lacks."""
    doc, _ = job
    ranks = {**doc["ranks"], "3": {**doc["ranks"]["2"], "steps": []}}
    summary = summarize({**doc, "ranks": ranks, "job": {**doc["job"], "ranks": 4}}, 60)
    assert summary.ranks == 3 and summary.op_ms_per_step_exact is False


def test_single_rank_uses_its_own_top_15_as_before(tmp_path):
    write_trace(tmp_path / "node0_100.1700000000000000000.pt.trace.json", _rank_events(0, 3, 500.0), rank=0)
    doc, _ = analyze_job(find_traces(tmp_path))
    summary = summarize(doc, 60)
    assert summary.op_ms_per_step_exact is True
    expected = {o["name"]: o["total_ms"] / 3 / 1 for o in doc["ranks"]["0"]["cpu_ops"]["top"]}
    assert summary.op_ms_per_step == expected  # bit for bit the per-rank formula


@pytest.mark.parametrize("job_value", [None, "x", {"ranks": True, "cpu_ops": {"top": "x"}},
                                       {"ranks": 3, "cpu_ops": {"top": [None, {"name": 3, "total_ms": "1"},
                                                                        {"name": "a", "total_ms": 10**400}]}}])
def test_a_hostile_job_table_costs_nothing(job, job_value):
    doc, _ = job
    summary = summarize({**doc, "job": job_value}, 60)
    assert all(isinstance(v, float) for v in summary.op_ms_per_step.values())


def test_compare_json_of_two_three_rank_runs_has_the_exact_values(tmp_path, job):
    from reportgen.compare.run import CompareOptions, compare

    _, brute = job
    a, b = tmp_path / "a", tmp_path / "b"
    _write_job(a)
    _write_job(b)
    out = tmp_path / "compare.md"
    compare(str(a), str(b), out, CompareOptions(fmt="md"))
    rows = json.loads(out.with_suffix(".json").read_text())["sections"]["operators"]["traces"]["rows"]
    assert rows[0]["operator"] == RARE
    for row in rows:
        assert row["a_ms_per_step"] == pytest.approx(brute[row["operator"]], rel=1e-12)
        assert row["b_ms_per_step"] == row["a_ms_per_step"]
