"""The framework traces reduced file by file (``engine.framework_events``): the merged summaries give
what the whole event table gives — the key rows, the duration sums per (phase, file type, name) in
first-appearance order, the correlations at instants / over intervals, the clock-jump drops — and the
rules' outputs on them are those of the table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reportgen.engine import analyze
from reportgen.engine.breakdown import breakdown, breakdown_of_groups
from reportgen.engine.framework_events import FrameworkEvents, merge_summaries, summarize_file
from reportgen.problems import ProblemLog
from reportgen.readers.clock import drop_clock_outliers, record_dropped_events
from reportgen.readers import framework
from reportgen.readers.framework import list_framework_files, read_framework, reduce_framework
from tests.support.paths import SAMPLE_DATA

BASE = 1_700_000_000_000_000  # µs


def _trace(folder: Path, end_us: int, node: str, events: list[dict], phases: dict[int, str]) -> Path:
    meta = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": BASE}}]
    meta += [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": ph}} for pid, ph in phases.items()]
    p = folder / f"{end_us}_{node}_pythontimeline.json"
    p.write_text(json.dumps(meta + events))
    return p


def _profile(root: Path) -> Path:
    """Three trace files of two workers whose events tie on start times across files (the order of
    first appearance is then decided by file order), CPU / GPU / step / dataloader / forward-backward
    / Horovod-less phases, step numbers, and one event stamped in 1990 (a clock jump)."""
    d = root / "framework" / "pevents" / "2023111422"
    d.mkdir(parents=True)
    phases = {1: "Step:ModeKeys.TRAIN", 2: "cpu_functions", 3: "gpu_functions", 4: "DataLoaderIter",
              5: "Forward-SubModuleInternal", 6: "Backward-SubModuleInternal", 7: "DataLoaderIterInitialize",
              8: "general_phase"}

    def x(name, proc, ts, dur, **args):
        return {"name": name, "ph": "X", "pid": proc, "ts": ts, "dur": dur, "args": args}

    f1 = [x("Step:ModeKeys.TRAIN", 1, 0, 900, step_num=0), x("conv", 2, 10, 300), x("relu", 2, 10, 50),
          x("kernel_a", 3, 20, 400), x("fetch", 4, 5, 100, pid=61), x("fwd", 5, 30, 200), x("bwd", 6, 300, 400),
          x("init", 7, 1, 2, num_workers=4, pin_memory=True), x("PrefetchThing", 8, 40, 10)]
    f2 = [x("Step:ModeKeys.TRAIN", 1, 1000, 950, step_num=1), x("relu", 2, 10, 70), x("matmul", 2, 1010, 300),
          x("kernel_b", 3, 1020, 400), x("fetch", 4, 1005, 90, pid=62), x("misc", 8, 10, 5)]
    f3 = [x("Step:ModeKeys.TRAIN", 1, 0, 990, step_num=0), x("conv", 2, 10, 310), x("kernel_a", 3, 25, 380),
          x("jump", 8, -(BASE - 631_152_000_000_000), 5)]  # 1990-01-01: far outside the files' range
    _trace(d, BASE + 2_000_000, "27-algo-1", f1, phases)
    _trace(d, BASE + 3_000_000, "27-algo-1", f2, phases)
    _trace(d, BASE + 2_000_000, "28-algo-1", f3, phases)
    return root


def _reduced(root: Path, problems: ProblemLog, span, spill=True) -> FrameworkEvents:
    from functools import partial

    return reduce_framework(root, problems, partial(summarize_file, span=span),
                            lambda it, pr: merge_summaries(it, pr, spill=spill))


def _span(root: Path):
    from reportgen.readers.clock import file_time_range_us
    from reportgen.readers.framework import file_key_us

    return file_time_range_us([file_key_us(p) for p in list_framework_files(root)])


# REDUCE_BATCH_BYTES: a file a reduction, runs of a few files, every file in one run
BATCH_SIZES = pytest.mark.parametrize("reduce_batch", [1, 2_500, 1 << 20])


@BATCH_SIZES
def test_merged_summaries_equal_the_whole_table(tmp_path, monkeypatch, reduce_batch):
    monkeypatch.setattr(framework, "REDUCE_BATCH_BYTES", reduce_batch)
    root = _profile(tmp_path / "p")
    span = _span(root)
    table_problems = ProblemLog()
    table = read_framework(root, table_problems)
    _, table = drop_clock_outliers({}, table, span, table_problems)
    problems = ProblemLog()
    fw = _reduced(root, problems, span)
    try:
        assert fw.n_events == len(table) == 18  # 19 events, the 1990 one dropped
        assert fw.dropped == {"algo-1-28": 1}
        assert problems.total == 0  # read_profile records the drops after the system metrics' ones
        record_dropped_events(problems, fw.dropped)
        assert table_problems.to_json() == problems.to_json()
        ref = FrameworkEvents.from_table(table)
        assert fw.extent == ref.extent == (BASE, BASE + 1000 + 950)
        assert fw.plausible_extent == ref.plausible_extent
        # duration sums per group in the table's order of first appearance (ties on start broken by file order)
        assert fw.groups.to_dict("list") == ref.groups[list(fw.groups.columns)].to_dict("list")
        relu = fw.groups[fw.groups["name"] == "relu"].iloc[0]
        assert (int(relu["dur"]), int(relu["count"])) == (120, 2)
        assert list(fw.groups["name"])[:4] == ["Step:ModeKeys.TRAIN", "init", "fetch", "conv"]
        # the key rows: steps, dataloader events, in table order, nothing else
        want = table[table["phase"].astype(str).isin(["Step:ModeKeys.TRAIN", "DataLoaderIter",
                                                      "DataLoaderIterInitialize"])].reset_index(drop=True)
        got = fw.rows.reset_index(drop=True)
        assert len(got) == 6
        for c in ("start_us", "end_us", "pid", "arg_pid", "num_workers", "pin_memory"):
            assert got[c].to_numpy().tobytes() == want[c].to_numpy().tobytes(), c
        for c in ("name", "phase", "node_id", "step_num"):
            assert got[c].astype(str).tolist() == want[c].astype(str).tolist(), c
        # the breakdown from the merged groups is the whole table's
        assert breakdown_of_groups(fw.groups, fw.rows) == breakdown(table, with_others=True)
        b = breakdown_of_groups(fw.groups, fw.rows)
        assert list(b["CPU_total"]) == ["conv", "matmul", "relu"] and b["CPU_total"]["conv"] == 610
        assert b["phase"]["others"] > 0 and set(b["forward_backward"]) == {"Forward pass", "Backward pass"}
        assert b["forward_backward"]["Forward pass"] == 200 / 600 * 100
    finally:
        fw.close()


@pytest.mark.parametrize("batch_bytes, batches", [
    (1, [[9], [3], [6]]),  # every file its own batch: start, end, group code, node code of each file on disk
    (250, [[9, 3]]),  # the first two files (288 bytes) written together, the third still in memory
    (4 << 20, []),  # nothing written: all three files in the buffer
])
def test_correlations_from_the_spilled_store_equal_the_tables(tmp_path, monkeypatch, batch_bytes, batches):
    """Whatever the spill batches (one per file, several files, none written yet), the correlations are the
    table's, ties on start broken by file and row as in the table."""
    from reportgen.engine import framework_events

    monkeypatch.setattr(framework_events, "SPILL_BATCH_BYTES", batch_bytes)
    monkeypatch.setattr(framework, "REDUCE_BATCH_BYTES", 1)  # a file a reduction: the store's files are the files
    root = _profile(tmp_path / "p")
    span = _span(root)
    table = drop_clock_outliers({}, read_framework(root, ProblemLog()), span, ProblemLog())[1]
    ref = FrameworkEvents.from_table(table)
    fw = _reduced(root, ProblemLog(), span)
    folder = Path(fw.store.folder)
    assert [lengths for _, lengths in fw.store.batches] == batches
    assert fw.n_events == 18  # 9 + 3 + 6 events (the 1990 one dropped), written or in the buffer
    assert len(list(folder.glob("*.npy"))) == 4 * len(batches)
    try:
        for instants in ([BASE + 15], [BASE + 15, BASE + 1015], [BASE + 5000], [BASE + 11, BASE + 350]):
            a, b = fw.groups_at_instants(instants), ref.groups_at_instants(instants)
            assert a.to_dict("list") == b[list(a.columns)].to_dict("list"), instants
        g = fw.groups_at_instants([BASE + 15])
        # active at +15 µs (start < t < end): both steps, conv x2, relu, fetch (5-105) -> not misc (10-15)
        assert sorted(g["name"]) == ["Step:ModeKeys.TRAIN", "conv", "fetch", "relu"]
        assert int(g[g["name"] == "conv"]["dur"].iloc[0]) == 610
        seg = (np.array([BASE + 1500]), np.array([BASE + 1600]))
        a, b = fw.groups_in_intervals(*seg), ref.groups_in_intervals(*seg)
        assert a.to_dict("list") == b[list(a.columns)].to_dict("list")
        assert list(a["name"]) == ["Step:ModeKeys.TRAIN"]
        assert _node_event_set(fw) == _node_event_set(ref)  # every event's node, spilled or not
    finally:
        fw.close()
    assert not folder.exists()


def _node_event_set(fw: FrameworkEvents) -> list:
    ev = fw.node_events()
    return sorted((int(s), int(e), *map(str, ev.triples[g]), ev.nodes[n])
                  for s, e, g, n in zip(ev.start_us, ev.end_us, ev.group, ev.node))


def test_every_event_keeps_its_node(tmp_path):
    """The store knows each event's node (smdebug's per-process node id): the 18 events kept, 9 + 6 of algo-1-27's
    two files and 3 of algo-1-28's (the 1990 one dropped as a clock jump)."""
    root = _profile(tmp_path / "p")
    fw = _reduced(root, ProblemLog(), _span(root))
    try:
        rows = _node_event_set(fw)
        nodes = [r[-1] for r in rows]
        assert len(rows) == 18 and nodes.count("algo-1-27") == 15 and nodes.count("algo-1-28") == 3
        assert ("algo-1-28" in [r[-1] for r in rows if r[4] == "conv"]) and not any(r[4] == "jump" for r in rows)
    finally:
        fw.close()


def test_memory_store_without_spill_gives_the_same(tmp_path):
    root = _profile(tmp_path / "p")
    span = _span(root)
    a, b = _reduced(root, ProblemLog(), span, spill=True), _reduced(root, ProblemLog(), span, spill=False)
    try:
        assert b.store.folder is None
        for t in ([BASE + 15], [BASE + 1015]):
            assert a.groups_at_instants(t).equals(b.groups_at_instants(t))
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("reduce_batch", [1, framework.REDUCE_BATCH_BYTES])
def test_analyze_holds_only_the_key_rows_and_removes_its_spill(tmp_path, monkeypatch, reduce_batch):
    """On sample_data the rules see 6,501 events through the summaries while the client holds only
    the steps and the dataloader's events (3,447 rows: 1,147 steps, 2 x 1,147 dataloader events, 6
    initialisations; no operator, forward or backward event); the rule outputs equal those computed
    from the whole table in memory, and the spilled columns are removed. The files reduced one by one
    (the spill batches then hold several files each) or in runs (the default)."""
    import tempfile

    from reportgen.engine import framework_events, load_data, run_rules
    from reportgen.engine.model import AnalysisData

    monkeypatch.setattr(framework_events, "SPILL_BATCH_BYTES", 32 << 10)
    monkeypatch.setattr(framework, "REDUCE_BATCH_BYTES", reduce_batch)
    sample = SAMPLE_DATA
    data, _ = load_data(sample)
    try:
        assert data.framework.n_events == 6501
        assert len(data.events) == 3447
        assert not set(data.events["phase"].astype(str)) & {"Forward", "cpu_functions", "gpu_functions-dev:0"}
        spilled = Path(data.framework.store.folder)
        # 6,501 events x 24 bytes = 156 KB: spilled in 32 KiB batches of several files each
        batches = data.framework.store.batches
        if reduce_batch == 1:
            assert len(batches) == 4 and all(len(lengths) > 1 for _, lengths in batches)
            assert sum(sum(lengths) for _, lengths in batches) < 6501  # the last files still in the buffer
        else:  # 26 files (0.83 MB) in one run, past 32 KiB of columns: written as soon as it comes
            assert [len(lengths) for _, lengths in batches] == [1]
            assert sum(sum(lengths) for _, lengths in batches) == 6501
        assert len(list(spilled.glob("*.npy"))) == 4 * len(batches)
        full = read_framework(sample, ProblemLog())
        assert len(full) == 6501
        whole = AnalysisData(nodes=data.nodes, events=full, t0_us=data.t0_us, n_windows=data.n_windows)
        assert json.dumps(run_rules(data)) == json.dumps(run_rules(whole))
        assert run_rules(data)["StepOutlier"]["Datapoints"] == 1147
    finally:
        data.framework.close()
    assert not spilled.exists()
    own_tmp = tmp_path / "tmp"
    own_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(own_tmp))
    made = []
    real_mkdtemp = tempfile.mkdtemp
    monkeypatch.setattr(tempfile, "mkdtemp", lambda *a, **k: made.append(real_mkdtemp(*a, **k)) or made[-1])
    analyze(sample, tmp_path / "out")
    spills = [m for m in made if "reportgen-events-" in m]
    assert len(spills) == 1 and spills[0].startswith(str(own_tmp)) and not Path(spills[0]).exists()


def test_group_sums_are_exact_integers_beyond_float_precision():
    """Durations summed as int64: 2**53 + 1 + 1 stays exact (a float64 sum would lose the ones)."""
    from reportgen.engine.framework_events import group_reduce

    codes = np.array([0, 0, 0, 1], np.int64)
    dur = np.array([2**53, 1, 1, 5], np.int64)
    c, sums, counts, fstart, frow = group_reduce(codes, np.array([3, 1, 1, 0]), dur, np.arange(4), 2)
    assert sums.tolist() == [2**53 + 2, 5] and counts.tolist() == [3, 1]
    assert fstart.tolist() == [1, 0] and frow.tolist() == [1, 3]  # first by (start, row)
    assert pd.Series(sums).dtype == np.int64


@BATCH_SIZES
def test_many_small_files_merge_like_one_table(tmp_path, monkeypatch, reduce_batch):
    """300 trace files (more than the 256 chunks after which the key rows' columns are joined),
    random events with many ties on start times across files: rows, group sums in first-appearance
    order and correlations equal the whole table's, whether the files are reduced one by one or in runs."""
    monkeypatch.setattr(framework, "REDUCE_BATCH_BYTES", reduce_batch)
    rng = np.random.default_rng(11)
    root = tmp_path / "p"
    d = root / "framework" / "pevents" / "2023111422"
    d.mkdir(parents=True)
    phases = {1: "Step:ModeKeys.TRAIN", 2: "cpu_functions", 3: "gpu_functions-dev:0", 4: "DataLoaderIter", 5: "misc"}
    names = ["a", "b", "c", "d", "e", "f"]
    for f in range(300):
        evs = []
        for _ in range(int(rng.integers(1, 8))):
            proc = int(rng.integers(1, 6))
            evs.append({"name": "Step:ModeKeys.TRAIN" if proc == 1 else str(rng.choice(names)), "ph": "X",
                        "pid": proc, "ts": int(rng.integers(0, 50)) * 10, "dur": int(rng.integers(1, 400)),
                        "args": {"step_num": int(rng.integers(0, 3)), "pid": 60 + proc}})
        _trace(d, BASE + 1_000_000 + f, f"{27 + f % 3}-algo-1", evs, phases)
    span = _span(root)
    table = read_framework(root, ProblemLog())
    ref = FrameworkEvents.from_table(table)
    fw = _reduced(root, ProblemLog(), span)
    try:
        assert fw.n_events == len(table) > 600
        assert fw.groups.to_dict("list") == ref.groups.to_dict("list")
        assert len(fw.groups) == 1 + 3 * 6 + 6  # the step, 6 names in 3 other phases, + 6 in misc
        key = table[table["phase"].astype(str).isin(["Step:ModeKeys.TRAIN", "DataLoaderIter"])].reset_index(drop=True)
        assert fw.rows["start_us"].tolist() == key["start_us"].tolist()
        assert fw.rows["node_id"].astype(str).tolist() == key["node_id"].astype(str).tolist()
        for t in ([BASE + 55], [BASE + 5, BASE + 205, BASE + 433]):
            assert fw.groups_at_instants(t).to_dict("list") == ref.groups_at_instants(t).to_dict("list")
        assert breakdown_of_groups(fw.groups, fw.rows) == breakdown(table, with_others=True)
    finally:
        fw.close()
