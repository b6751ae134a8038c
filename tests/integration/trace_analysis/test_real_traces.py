"""Real PyTorch profiler traces -> reports whose kernel and operator tables match an independent
reading of the same files (plain gzip + json here, nothing from reportgen.trace_analysis)."""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from reportgen.pipeline import generate
from tests.support.paths import RAW, need
from tests.support.html_tables import read_tables

FIXTURES = ["kineto-resnet50-num-workers-0", "kineto-resnet50-num-workers-4", "hta-sampled-128rank",
            "hta-resnet-v100-1gpu", "hta-trace-diff-rank3of8", "hta-cpu-only-gloo"]


def independent(path: Path) -> dict:
    """Kernel totals and CPU-operator totals per name, in ms, straight from the file."""
    doc = json.loads(gzip.open(path, "rt", encoding="utf-8").read())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    kernels = defaultdict(lambda: [0.0, 0])
    ops = defaultdict(lambda: [0.0, 0])
    scale = 1.0
    if max(e.get("ts", 0) for e in events if isinstance(e.get("ts"), (int, float))) > 1e17:
        scale = 1e-3  # a nanosecond trace
    for e in events:
        if e.get("ph") != "X":
            continue
        cat = str(e.get("cat", "")).lower()
        if cat == "kernel":
            kernels[e["name"]][0] += e["dur"] * scale / 1000.0
            kernels[e["name"]][1] += 1
        elif cat in ("cpu_op", "operator") and not re.match(r"^ProfilerStep#\d+$", e["name"]):
            ops[e["name"]][0] += e["dur"] * scale / 1000.0
            ops[e["name"]][1] += 1
    info = doc.get("distributedInfo") if isinstance(doc, dict) else None
    rank = info.get("rank") if isinstance(info, dict) else None
    return {"kernels": kernels, "ops": ops, "rank": rank}


def top(table: dict, n: int) -> list[tuple[str, float, int]]:
    ranked = sorted(table.items(), key=lambda kv: -kv[1][0])
    return [(name, total, count) for name, (total, count) in ranked[:n]]


@pytest.fixture(scope="module", params=FIXTURES)
def generated(request, tmp_path_factory):
    folder = need(RAW / request.param)
    out = tmp_path_factory.mktemp(request.param) / "report.html"
    generate(str(folder), out)
    return folder, out


def _label(path: Path, rank, ranks: dict) -> str:
    """The rank a file belongs to, told independently: distributedInfo.rank, a rank number in the name,
    else torch's ``<worker>.<timestamp>.pt.trace.json`` worker part (one file per profiling cycle)."""
    if rank is not None and str(rank) in ranks:
        return str(rank)
    match = re.search(r"rank[-_]?(\d+)", path.name)
    if match and match.group(1) in ranks:
        return match.group(1)
    worker = re.match(r"^(.+)\.\d{10,}\.pt\.trace\.json", path.name)
    if worker and worker.group(1) in ranks:
        return worker.group(1)
    return path.name.split(".pt.trace")[0].split(".json")[0]


def _merge(into: dict, table: dict) -> None:
    for name, (total, count) in table.items():
        into[name][0] += total
        into[name][1] += count


@pytest.mark.fixtures
def test_kernel_and_operator_tables_match_an_independent_reading(generated):
    folder, out = generated
    tables = read_tables(out.read_text(encoding="utf-8"))
    data = json.loads(out.with_suffix(".json").read_text())["sections"]["gpu-kernels-operators"]
    files = sorted(folder.glob("*.json.gz"))
    by_rank: dict[str, dict] = {}
    for path in files:
        truth = independent(path)
        label = _label(path, truth["rank"], data["ranks"])
        rank_truth = by_rank.setdefault(label, {"kernels": defaultdict(lambda: [0.0, 0]),
                                                "ops": defaultdict(lambda: [0.0, 0]), "files": []})
        _merge(rank_truth["kernels"], truth["kernels"])
        _merge(rank_truth["ops"], truth["ops"])
        rank_truth["files"].append(path.name)
    assert files and sorted(data["ranks"]) == sorted(by_rank)
    assert "kineto-ranks" in tables and len(tables["kineto-ranks"]) == len(by_rank) + 1
    for label, truth in by_rank.items():
        rank = data["ranks"][label]
        assert sorted(rank["files"]) == sorted(truth["files"]) and rank["cycles"] == len(truth["files"])
        expected_total = sum(t for t, _ in truth["kernels"].values())
        assert rank["kernels"]["total_ms"] == pytest.approx(expected_total, rel=1e-9, abs=1e-9)
        assert rank["kernels"]["count"] == sum(c for _, c in truth["kernels"].values())
        if truth["kernels"]:
            rows = tables[f"kineto-kernels-{re.sub(r'[^A-Za-z0-9_.-]+', '-', label)}"][1:]
            for (name, total, count), row in zip(top(truth["kernels"], 5), rows):
                assert row[0] == name
                assert float(row[1]) == pytest.approx(total, abs=0.006)
                assert int(row[2]) == count
        else:
            assert not rank["kernels"]["top"]
        ops_rows = tables[f"kineto-ops-{re.sub(r'[^A-Za-z0-9_.-]+', '-', label)}"][1:]
        for (name, total, count), row in zip(top(truth["ops"], 5), ops_rows):
            assert row[0] == name
            assert float(row[1]) == pytest.approx(total, abs=0.006)
            assert int(row[2]) == count
        assert len(ops_rows) == min(15, len(truth["ops"]))


@pytest.mark.fixtures
def test_sections_needing_sagemaker_data_are_left_out_and_named(generated):
    folder, out = generated
    html = out.read_text(encoding="utf-8")
    assert "output was found" not in html and 'id="sec-batch-size"' not in html
    assert 'id="sec-gpu-kernels-operators"' in html and 'id="sec-step-duration-analysis"' in html
    sections = json.loads(out.with_suffix(".json").read_text())["sections"]
    # Dataloading analysis stays when the traces hold DataLoader events (their share of step time).
    loader = sections["dataloading-analysis"]
    shown = loader.get("available") is not False
    assert shown == any((r.get("dataloader") or {}).get("events") for r in sections["gpu-kernels-operators"]["ranks"].values())
    assert f"This report was made from PyTorch profiler traces only. The {13 if shown else 14} sections that need" in html
    assert sections["batch-size"] == {"available": False} and sections["gpu-kernels-operators"]["ranks"]
