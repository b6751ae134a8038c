"""Issue 32: memory that does not grow with the job's duration. The tick tables past a budget are
spilled to a temporary file and read back per use, and the rules that reduce many columns per tick
read a block of ticks at a time; both must leave every output byte for byte as it was."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reportgen.readers import tick_table
from reportgen.readers.tick_table import ColumnSpill, NodeSystem, TableBudget
from reportgen.rulebook import RULE_ORDER


def _table() -> NodeSystem:
    """Columns of every encoding: int16 / int32 codes (scale 100 and 1), float32, float64, with NaN."""
    rng = np.random.default_rng(3)
    n = 1001
    cols = {
        "cpu0/CPUUtilization": np.round(rng.uniform(0, 100, n), 2),  # int16, scale 100
        "eth0/Algorithm": np.round(rng.uniform(0, 3e6, n)),  # int32, scale 1
        "odd/float32": rng.uniform(0, 1, n).astype(np.float32).astype(np.float64),
        "odd/float64": rng.uniform(0, 1, n) / 3,
    }
    for j, v in enumerate(cols.values()):
        v[rng.integers(0, n, 50 + j)] = np.nan
    names = [c.split("/")[0] for c in cols]
    dims = [c.split("/")[1] for c in cols]
    t = 1_700_000_000.0 + np.arange(n) * 0.5
    return NodeSystem("algo-1", 0.5, t, list(cols), ["cpu", "network", "x", "x"], names, dims,
                      np.column_stack(list(cols.values())), first_ts=float(t[0]), last_ts=float(t[-1]))


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.tobytes() == b.tobytes() and a.flags.f_contiguous == b.flags.f_contiguous


def test_a_spilled_table_reads_back_bit_for_bit_whole_and_by_blocks_of_ticks():
    held, spilled = _table(), _table()
    dtypes = [a.dtype for a, _ in held._store]
    assert {np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.float32), np.dtype(np.float64)} == set(dtypes)
    spill = ColumnSpill()
    spilled.spill(spill)
    assert spilled.nbytes == spilled.tick_ts.nbytes  # nothing of the columns left in memory
    assert spill.bytes == held.nbytes - held.tick_ts.nbytes
    whole = held.take(range(4))
    assert _same(spilled.take(range(4)), whole)
    assert np.isnan(whole).sum() > 0
    for rows in [(0, 1), (0, 1001), (17, 503), (1000, 1001), (990, 2000), (5, 5)]:
        part = held.take([3, 0, 2], rows)
        assert _same(part, np.asfortranarray(whole[rows[0]:min(rows[1], 1001)][:, [3, 0, 2]]))
        assert _same(spilled.take([3, 0, 2], rows), part)
    # blocks cover the ticks once, in order
    blocks = held.row_blocks(300)
    assert blocks == [(0, 300), (300, 600), (600, 900), (900, 1001)]
    assert np.array_equal(np.concatenate([held.take([0], r) for r in blocks]), whole[:, [0]], equal_nan=True)
    assert NodeSystem("e", 0.5, np.zeros(0), ["a"], ["cpu"], ["a"], ["d"], np.zeros((0, 1))).row_blocks() == [(0, 0)]


def test_the_budget_spills_only_past_its_limit_and_a_failed_spill_keeps_the_table(tmp_path):
    one = _table().nbytes - _table().tick_ts.nbytes
    budget = TableBudget(limit=2 * one)
    tables = [budget.hold(_table()) for _ in range(4)]
    assert [t.nbytes > t.tick_ts.nbytes for t in tables] == [True, True, False, False]
    assert _same(tables[3].take(range(4)), tables[0].take(range(4)))
    # no temporary folder to write in: the tables stay in memory and the run goes on
    failing = TableBudget(limit=0, folder=str(tmp_path / "absent"))
    kept = [failing.hold(_table()) for _ in range(2)]
    assert all(t.nbytes > t.tick_ts.nbytes for t in kept)
    assert _same(kept[1].take(range(4)), _table().take(range(4)))


def test_a_full_disk_mid_table_leaves_every_column_in_memory(monkeypatch):
    spill = ColumnSpill()
    written = []

    def short(fd, data, offset):
        written.append(offset)
        return 0 if len(written) > 2 else len(data)  # the third column finds the disk full

    monkeypatch.setattr(tick_table.os, "pwrite", short)
    table = _table()
    before = table.take(range(4))
    with pytest.raises(OSError):
        table.spill(spill)
    assert all(isinstance(a, np.ndarray) for a, _ in table._store)
    assert _same(table.take(range(4)), before)


def test_rule_outputs_and_timeline_are_unchanged_by_spilling_and_blocks_of_ticks(tmp_path, monkeypatch):
    """A 2-node profile whose bottleneck, batch-size and system-usage rules and timeline have work
    to do, analysed with every table in memory in one block, then with every table spilled and
    blocks of 97 ticks (neither a bucket's nor a window's multiple): every file byte for byte."""
    from reportgen.engine import analyze
    from testdata.synthetic import Scenario, generate

    raw = tmp_path / "raw"
    generate(raw, nodes=2, cores=4, gpus=2, duration_s=900, seed=5, framework=True,
             scenario=Scenario(cpu_bottleneck_fraction=0.4, iowait_spike_fraction=0.2, init_s=30.0))
    monkeypatch.setenv("REPORTGEN_TABLES_MEMORY_MB", "1000")
    analyze(raw, tmp_path / "held")
    monkeypatch.setenv("REPORTGEN_TABLES_MEMORY_MB", "0")
    monkeypatch.setattr(tick_table, "ROW_BLOCK", 97)
    analyze(raw, tmp_path / "spilled")
    files = sorted(p.relative_to(tmp_path / "held") for p in (tmp_path / "held").rglob("*.json"))
    assert len(files) == len(RULE_ORDER) + 2  # the rules, data quality, timeline
    for rel in files:
        assert (tmp_path / "spilled" / rel).read_bytes() == (tmp_path / "held" / rel).read_bytes(), rel
    import json

    cpu = json.loads((tmp_path / "held" / "profiler-reports" / "CPUBottleneck.json").read_text())
    assert cpu["Violations"] > 0  # the blocks had bottlenecks to count
    timeline = json.loads((tmp_path / "held" / "timeline.json").read_text())
    node = next(iter(timeline["nodes"].values()))
    assert len(node["t"]) > 97 and not math.isnan(node["cpu_heatmap"]["mean"][0][0])
