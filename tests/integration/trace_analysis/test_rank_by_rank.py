"""The rank-by-rank analysis (``reportgen.trace_analysis.job``) gives exactly what the all-files-at-once
analysis gave: kineto.json byte-equal to the frozen output (tests/snapshots/kineto, written by that
code before it was replaced) on every fixture trace set and on synthetic sets that plant the grouping
cases; plus the job-wide tables checked against a brute-force sum over every event."""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from reportgen.trace_analysis.job import analyze_traces, plan_tasks
from tests.support.paths import RAW
from tests.support.trace_sets import FIXTURE_SETS, SNAPSHOTS, fixture_files, normalised, synthetic_sets


NEW_KERNEL_KEYS = ("min_us", "p25_us", "p50_us", "p75_us", "max_us", "std_us", "sample_std_us")  # issue 28: the distribution per kernel


def _without_job(doc: dict) -> dict:
    """What the frozen output holds: without ``job``, the GPU analyses (issue 28, checked in
    tests/unit/trace_analysis/test_gpu_analyses.py), the step-time account (issue 46, checked in
    tests/unit/trace_analysis/test_account.py), the memory and FLOPs (issue 48, tests/unit/trace_analysis/
    test_memory.py, test_flops.py) added since, which must leave every other byte as it was."""
    ranks = {}
    for label, rank in doc["ranks"].items():
        rank = {k: v for k, v in rank.items() if k not in ("gpu_analysis", "account", "memory", "flops")}
        kernels = dict(rank["kernels"])
        kernels["top"] = [{k: v for k, v in row.items() if k not in NEW_KERNEL_KEYS} for row in kernels["top"]]
        ranks[label] = {**rank, "kernels": kernels}
    return {k: (ranks if k == "ranks" else v) for k, v in doc.items() if k != "job"}


def _frozen(name: str) -> dict:
    return json.loads((SNAPSHOTS / f"{name}.json").read_text())


@pytest.mark.fixtures
@pytest.mark.parametrize("name", FIXTURE_SETS)
def test_fixture_sets_give_the_frozen_kineto_json(name):
    doc, problems = analyze_traces(fixture_files(name))
    assert normalised(_without_job(doc), problems, RAW / name) == _frozen(name)
    assert list(doc)[-1] == "job"  # the new key comes after the existing ones


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return synthetic_sets(tmp_path_factory.mktemp("sets"))


@pytest.mark.parametrize("name", ["ddp4", "regroup"])
def test_synthetic_sets_give_the_frozen_kineto_json(synthetic, name):
    files = synthetic[name]
    doc, problems = analyze_traces(files)
    assert normalised(_without_job(doc), problems, files[0].parent if name == "ddp4" else files[0].parents[1]
                      ) == _frozen(f"synthetic-{name}")


def test_the_regroup_case_plans_tasks_that_the_merge_joins(synthetic):
    files = synthetic["regroup"]
    names = [f.relative_to(files[0].parents[1]).as_posix() for f in files]
    tasks = [[names[i] for i in task] for task in plan_tasks([str(f) for f in files])]
    # planned from names only: vm_1's two cycles together, every other file alone
    assert sorted(tasks) == sorted([["a/x.json"], ["b/x.json"], ["rank-3.json"],
                                    ["rank-3b.json"],
                                    ["vm_1.1700000000000000000.pt.trace.json",
                                     "vm_1.1700000001000000000.pt.trace.json"],
                                    ["vm_2.1700000000000000001.pt.trace.json"],
                                    ["vm_3.1700000002000000000.pt.trace.json.gz"],
                                    ["y.json"]])
    doc, _ = analyze_traces(files)
    # ... and the ranks are what the files say: the cut cycle in rank 0, vm_2 + vm_3 in rank 1,
    # rank-3 + rank-3b in rank 3, the two x.json in one rank
    assert list(doc["ranks"]) == ["0", "1", "3", "x", "y"]
    assert doc["ranks"]["0"]["cycles"] == 2 and doc["ranks"]["1"]["workers"] == ["vm_2", "vm_3"]
    assert doc["ranks"]["3"]["files"] == ["rank-3.json", "rank-3b.json"]
    assert doc["ranks"]["x"]["cycles"] == 2


def _brute_force(files: list[Path]) -> dict:
    """Kernel and CPU-operator totals per name over every event of every file (plain json)."""
    tables = {"kernels": defaultdict(lambda: [0.0, 0]), "cpu_ops": defaultdict(lambda: [0.0, 0])}
    for path in files:
        raw = path.read_bytes()
        text = gzip.decompress(raw).decode() if raw[:2] == b"\x1f\x8b" else raw.decode()
        try:
            events = json.loads(text)["traceEvents"]
        except ValueError:
            return {}
        scale = 1e-3 if max(e["ts"] for e in events if isinstance(e.get("ts"), (int, float))) > 1e17 else 1.0
        for e in events:
            cat = str(e.get("cat", "")).lower()
            if e.get("ph") != "X":
                continue
            key = ("kernels" if cat == "kernel" else
                   "cpu_ops" if cat in ("cpu_op", "operator") and not re.match(r"^ProfilerStep#\d+$", e["name"]) else None)
            if key:
                tables[key][e["name"]][0] += e["dur"] * scale
                tables[key][e["name"]][1] += 1
    return tables


@pytest.mark.fixtures
@pytest.mark.parametrize("name", ["hta-sampled-128rank", "torch-cpu-record-ddp2", "kineto-resnet50-num-workers-4",
                                  "ddp4"])
def test_job_wide_top_15_equals_a_brute_force_sum_over_all_events(synthetic, name):
    files = synthetic[name] if name in synthetic else fixture_files(name)
    doc, _ = analyze_traces(files)
    truth = _brute_force(files)
    for key, count_key in (("kernels", "launches"), ("cpu_ops", "calls")):
        expected = sorted(truth[key].items(), key=lambda kv: (-kv[1][0], kv[0]))[:15]
        got = doc["job"][key]["top"]
        assert [row["name"] for row in got] == [name for name, _ in expected]
        for row, (_, (total_us, count)) in zip(got, expected):
            assert row[count_key] == count
            assert row["total_ms"] == pytest.approx(total_us / 1000.0, rel=1e-12)
        assert doc["job"][key]["distinct"] == len(truth[key])
        assert doc["job"][key]["count"] == sum(c for _, c in truth[key].values())
    assert doc["job"]["ranks"] == len(doc["ranks"])
    if doc["job"]["kernels"]["top"]:
        # per-rank extremes: the most a rank spent in the job's top kernel is that rank's own total
        top = doc["job"]["kernels"]["top"][0]
        own = {r["name"]: r["total_ms"] for r in doc["ranks"][top["max_rank"]]["kernels"]["top"]}
        assert own.get(top["name"]) == pytest.approx(top["max_rank_ms"], rel=1e-12)
        assert top["min_rank_ms"] <= top["max_rank_ms"] and 1 <= top["ranks"] <= len(doc["ranks"])


# ------------------------------------------------------------------------------------ on Dask


@pytest.mark.fixtures
@pytest.mark.parametrize("name", ["hta-sampled-128rank", "torch-cpu-record-ddp2", "kineto-resnet50-num-workers-0",
                                  "ddp4", "regroup"])
def test_dask_gives_the_same_kineto_json_and_problems_as_the_local_path(synthetic, dask_cluster, name):
    import os

    files = synthetic[name] if name in synthetic else fixture_files(name)
    local_doc, local_problems = analyze_traces(files)
    stats: list = []
    doc, problems = analyze_traces(files, client=dask_cluster, stats=stats)
    assert json.dumps(doc) == json.dumps(local_doc)
    assert problems.to_json() == local_problems.to_json()
    workers = set(dask_cluster.run(os.getpid).values())
    assert {s.worker_pid for s in stats} <= workers and os.getpid() not in workers
    # one task per planned group (plus, for the regroup set, the three ranks reduced again from all their files)
    planned = len(plan_tasks([str(f) for f in files]))
    assert len(stats) == planned + (3 if name == "regroup" else 0)  # ranks 1, 3 and x
    assert sum(s.files for s in stats[:planned]) == len(files)


def test_scheduler_local_2_through_write_kineto_outputs(synthetic, tmp_path):
    from reportgen.trace_analysis import write_kineto_outputs

    files = synthetic["ddp4"]
    write_kineto_outputs(files, tmp_path / "here")
    write_kineto_outputs(files, tmp_path / "dask", scheduler="local:2")
    for name in ("kineto.json", "profiler-reports/StepOutlier.json"):
        assert (tmp_path / "dask" / name).read_bytes() == (tmp_path / "here" / name).read_bytes()


def test_the_kineto_section_leads_with_the_ranks_and_job_wide_tables_and_folds_each_rank(synthetic):
    from reportgen.report.model import Details, Table
    from reportgen.report.sections.gpu_kernels_operators import build
    from reportgen.rule_outputs import RuleOutputs

    doc, _ = analyze_traces(synthetic["ddp4"])
    section = build(RuleOutputs(folder=Path("job"), traces=doc))
    tables = [b for b in section.blocks if isinstance(b, Table)]
    assert [t.id for t in tables[:4]] == ["kineto-ranks", "kineto-step-account", "kineto-job-kernels", "kineto-job-ops"]
    account = tables[1]  # every rank's slices, each rank's rows ending with its whole step
    assert [row[1] for row in account.rows if row[0] == "0"][-1] == "Step (all slices)"
    assert sum(row[3] for row in account.rows if row[0] == "0" and row[1] != "Step (all slices)") == pytest.approx(100)
    kernels = tables[2]
    assert [row[0] for row in kernels.rows] == [k["name"] for k in doc["job"]["kernels"]["top"]]
    nccl = next(row for row in kernels.rows if row[0].startswith("ncclKernel"))
    # rank 2's kernels run 2x longer, so the others wait 2x longer in NCCL: rank 2 spends least there
    ranks = {label: {k["name"]: k["total_ms"] for k in r["kernels"]["top"]} for label, r in doc["ranks"].items()}
    totals = [ranks[label]["ncclKernel_AllReduce_RING_LL_Sum_float"] for label in "0123"]
    assert nccl[1] == pytest.approx(sum(totals)) and nccl[5] == 4
    assert nccl[6] == f"{min(totals):.2f} – {max(totals):.2f} (rank {'0123'[totals.index(max(totals))]})"
    folded = [b for b in section.blocks if isinstance(b, Details)]
    assert doc["straggler"]["rank"] == "2"
    assert [d.summary.split(",")[0] for d in folded] == ["Rank 0", "Rank 1", "Rank 2 (the straggler)", "Rank 3"]
    assert any(isinstance(b, Table) and b.id == "kineto-kernels-2" for b in folded[2].blocks)
    assert section.data["job"] == doc["job"]


def test_a_dask_worker_that_died_is_a_one_line_input_error(synthetic):
    pytest.importorskip("distributed")
    from types import SimpleNamespace

    from distributed import KilledWorker

    from reportgen.errors import InputError

    class DyingCluster:  # what a client reports when the worker running a task was killed (e.g. out of memory)
        def submit(self, *args, **kwargs):
            return self

        def release(self):
            pass

        def gather(self, futures):
            raise KilledWorker("reduce_task-1234", SimpleNamespace(address="tcp://10.0.0.7:40000"), 3)

    with pytest.raises(InputError, match=r"^--scheduler: a Dask worker died while analysing PyTorch profiler "
                                         r"traces \(.*reduce_task-1234.*\); each worker needs"):
        analyze_traces(synthetic["ddp4"], client=DyingCluster())


def test_with_many_ranks_their_spread_leads_and_the_row_per_rank_table_and_charts_are_folded(synthetic):
    import copy
    import statistics

    from reportgen.report.model import Chart, Details, Table
    from reportgen.report.sections.gpu_kernels_operators import MANY_RANKS, build
    from reportgen.rule_outputs import RuleOutputs

    doc, _ = analyze_traces(synthetic["ddp4"])
    base = doc["ranks"]["0"]
    ranks = {}
    for i in range(MANY_RANKS + 4):  # 20 ranks, step means 100, 101, ... ms; rank 7 loads data for 40 % of its steps
        r = copy.deepcopy(base)
        r["step_stats_ms"]["mean"] = 100.0 + i
        r["dataloader"]["step_share"] = 0.4 if i == 7 else 0.05 + i / 1000
        ranks[str(i)] = r
    many = dict(doc, ranks=ranks)
    section = build(RuleOutputs(folder=Path("job"), traces=many))
    tables = [b for b in section.blocks if isinstance(b, Table)]
    assert tables[0].id == "kineto-ranks-spread"
    rows = {row[0]: row[1:] for row in tables[0].rows}
    assert rows["Mean step (ms)"] == [100.0, "0", statistics.median(100.0 + i for i in range(20)), 119.0, "19", 20]
    loader = rows["DataLoader share (%)"]
    assert loader[:2] == [pytest.approx(5.0), "0"] and loader[3:5] == [pytest.approx(40.0), "7"]
    folded = [b for b in section.blocks if isinstance(b, Details)]
    assert folded[0].summary == "All 20 ranks, one row each"
    assert [b.id for b in folded[0].blocks] == ["kineto-ranks"] and len(folded[0].blocks[0].rows) == 20
    assert folded[1].summary.startswith("Collective wait and mean step time of all 20 ranks")
    assert [b.id for b in folded[1].blocks if isinstance(b, Chart)] == ["kineto-wait-by-rank", "kineto-step-by-rank"]
    assert not [b for b in section.blocks if isinstance(b, Chart) and b.id in ("kineto-wait-by-rank", "kineto-step-by-rank")]
