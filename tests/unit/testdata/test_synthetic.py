"""Tests of the synthetic raw-profile generator (testdata.synthetic) and of sample_data/.

The checks re-read the written files with the standard ``json`` module (independently of the
generator's numpy formatter) and recompute the planted conditions from them.
"""

from __future__ import annotations

import glob
import hashlib
import json
import math
import os
import re
import sys
from collections import defaultdict

import numpy as np
import pytest

from testdata.synthetic import Scenario, generate, records_per_tick
from tests.support.paths import ROOT as CHECKOUT

ROOT = str(CHECKOUT)
SAMPLE = os.path.join(ROOT, "sample_data")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

SYS_RE = re.compile(r".+/system/.+/(\d{10}).algo-\d+.json")
SYS_NAME_RE = re.compile(r"^(\d{10})\.algo-(\d+)\.json$")
TRACE_NAME_RE = re.compile(r"^(\d{16})_(\d+)-algo-(\d+)_pythontimeline\.json$")
HOUR_RE = re.compile(r"^\d{10}$")

TYPES = {"cpu", "gpu", "memory", "i/o", "network"}
FIELDS = ["Type", "Name", "Dimension", "Value", "NodeId", "Timestamp"]
VOCAB = {
    ("memory", "MemoryUsedPercent", ""),
    ("i/o", "IOPS", ""),
    ("i/o", "ReadThroughputInBytesPerSecond", ""),
    ("i/o", "WriteThroughputInBytesPerSecond", ""),
    ("network", "ReceiveBytesPerSecond", "Algorithm"),
    ("network", "TransmitBytesPerSecond", "Algorithm"),
    ("network", "ReceiveBytesPerSecond", "Platform"),
    ("network", "TransmitBytesPerSecond", "Platform"),
}

SMALL = dict(nodes=2, cores=3, gpus=2, duration_s=150, interval_ms=500, seed=7)
SMALL_SC = Scenario(
    init_s=20, step_ms=200, eval_every=200, eval_steps=20, step_outliers=4,
    cpu_bottleneck_fraction=0.3, iowait_spike_fraction=0.1, gpu_memory_jumps=1,
    gpu_memory_jump_window=(0.6, 0.6), dataloader_workers=3, pin_memory=False,
)


# ------------------------------------------------------------------------------------ helpers

def tree_hashes(root: str) -> dict[str, str]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def system_files(root: str) -> list[str]:
    files = glob.glob(os.path.join(root, "system", "**", "*.json"), recursive=True)
    # reader order: by key (minute), then path
    return sorted(files, key=lambda p: (int(SYS_RE.match(p).group(1)), p))


def load_system(root: str) -> list[dict]:
    recs = []
    for p in system_files(root):
        with open(p) as fh:
            for line in fh:
                recs.append(json.loads(line))
    return recs


def trace_files(root: str) -> list[str]:
    return sorted(glob.glob(os.path.join(root, "framework", "pevents", "*", "*_pythontimeline.json")))


def load_trace_events(root: str) -> list[dict]:
    """Parse traces the way the spec's reader does (A.3): absolute µs, phase from pid."""
    out = []
    for p in trace_files(root):
        node = os.path.basename(p).split("_")[1]
        m = re.match(r"(.*)-(algo.*)", node)
        node_id = f"{m.group(2)}-{m.group(1)}"
        with open(p) as fh:
            arr = json.load(fh)
        base = None
        names = {}
        for e in arr:
            if e["ph"] == "M" and e["name"] == "process_name":
                if "start_time_since_epoch_in_micros" in e["args"]:
                    base = e["args"]["start_time_since_epoch_in_micros"]
                if "name" in e["args"]:
                    names[e["pid"]] = e["args"]["name"]
            elif e["ph"] == "X":
                s = e["ts"] + base
                out.append(dict(start=s, end=s + e["dur"], name=e["name"], phase=names.get(e["pid"], "Unknown"),
                                args=e.get("args"), node=node_id, key=int(os.path.basename(p).split("_")[0])))
    return out


def ticks(recs: list[dict]) -> dict[tuple[str, int], list[dict]]:
    """Group records by (node, sampling instant) using the CPUBottleneck rule's 20 ms grouping."""
    groups: dict = {}
    snap = None
    key = None
    for r in recs:
        if snap is None or abs(snap - r["Timestamp"]) > 0.02:
            snap = r["Timestamp"]
            key = (r["NodeId"], len(groups))
            groups[key] = []
        groups[key].append(r)
    return groups


def js_distance(h1, h2) -> float:
    p = np.asarray(h1, float) / np.sum(h1)
    q = np.asarray(h2, float) / np.sum(h2)
    m = (p + q) / 2

    def kl(a, b):
        nz = a > 0
        return float(np.sum(a[nz] * np.log(a[nz] / b[nz])))

    return math.sqrt((kl(p, m) + kl(q, m)) / 2)


def analyse(root: str) -> dict:
    """Recompute the quantities the rules decide on (spec Part B, faithful windows/patience,
    LoadBalancing pairwise as intended).  Used to check the sample's README claims."""
    recs = load_system(root)
    evs = load_trace_events(root)
    sys_keys = [int(SYS_RE.match(p).group(1)) * 1_000_000 for p in system_files(root)]
    fw_keys = sorted({e["key"] for e in evs})
    T0 = min(sys_keys)
    L = max(sys_keys) if not fw_keys else min(max(sys_keys), max(fw_keys))
    S = 60_000_000
    n_win = 0
    while T0 + n_win * S < L:
        n_win += 1
    last_end = T0 + n_win * S  # end of the last analysed window
    sys_in = [r for r in recs if r["Timestamp"] * 1e6 <= last_end]
    res: dict = {"windows": n_win}

    # CPU / IO bottleneck
    snaps = ticks(sys_in)
    dp = len(snaps)
    cpu_b = io_b = low = 0
    for rs in snaps.values():
        g_low = any(r["Dimension"] == "GPUUtilization" and r["Value"] < 10 for r in rs)
        low += g_low
        cpu_b += g_low and any(r["Dimension"] == "CPUUtilization" and r["Value"] > 90 for r in rs)
        io_b += g_low and any(r["Dimension"] == "I/OWaitPercentage" and r["Value"] > 50 for r in rs)
    res["snapshots"] = dp
    res["cpu_bottlenecks"] = cpu_b
    res["io_bottlenecks"] = io_b
    res["low_gpu"] = low

    # per-GPU series with window ends
    util = defaultdict(list)
    mem = defaultdict(list)
    for r in sys_in:
        if r["Dimension"] == "GPUUtilization":
            util[(r["NodeId"], r["Name"])].append((r["Timestamp"], r["Value"]))
        elif r["Dimension"] == "GPUMemoryUtilization":
            mem[(r["NodeId"], r["Name"])].append((r["Timestamp"], r["Value"]))
    lowgpu = {}
    for k, series in util.items():
        ts = np.array([t for t, _ in series])
        v = np.array([x for _, x in series])
        viol = 0
        for w in range(n_win):
            n = int(np.searchsorted(ts * 1e6, T0 + (w + 1) * S, side="right"))
            if n > 1000:
                win = v[:n][-500:]
                q95, q5 = np.quantile(win, 0.95), np.quantile(win, 0.05)
                viol += bool(q95 < 70 or (q95 > 70 and q5 < 10))
        lowgpu[k] = dict(violations=viol, p95=float(np.quantile(v[-500:], 0.95)),
                         p5=float(np.quantile(v[-500:], 0.05)))
    res["lowgpu"] = lowgpu
    memv = {}
    for k, series in mem.items():
        v = [x for _, x in series]
        idx = []
        for i in range(len(v)):
            s = v[: i + 1]
            if len(s) > 11 and len(s) > 1000:
                if np.mean(s[-10:]) - np.mean(s[-11:-2]) > 5:
                    idx.append(i)
        memv[k] = idx
    res["gpu_memory_violations"] = memv
    # LoadBalancing (intended pairwise comparison inside a node)
    hists = {k: np.histogram([x for _, x in s], bins=np.arange(0, 100, 2))[0] for k, s in util.items()}
    lb = {}
    for (node, g1), h1 in hists.items():
        for (node2, g2), h2 in hists.items():
            if node == node2 and g1 < g2:
                lb[(node, g1, g2)] = js_distance(h1, h2)
    res["load_balancing"] = lb
    # BatchSize: mean core utilisation p95 of the last 500
    cpu_tot = defaultdict(lambda: defaultdict(list))
    for r in sys_in:
        if r["Dimension"] == "CPUUtilization":
            cpu_tot[r["NodeId"]][r["Timestamp"]].append(r["Value"])
    res["cpu_total_p95"] = {n: float(np.quantile([np.mean(x) for x in d.values()][-500:], 0.95))
                            for n, d in cpu_tot.items()}
    res["gpu_memory_p95"] = {k: float(np.quantile([x for _, x in s][-500:], 0.95)) for k, s in mem.items()}

    # framework: events overlapping the analysed range (windows double count boundary events)
    fw = [e for e in evs if e["start"] <= last_end]
    steps = defaultdict(list)
    for w in range(n_win):
        a, b = T0 + w * S, T0 + (w + 1) * S
        for e in fw:
            if e["name"] == "Step:ModeKeys.TRAIN" and not (e["end"] < a or b < e["start"]):
                steps[e["node"]].append(((e["end"] - e["start"]) / 1e6, e["args"]["step_num"]))
    so = {}
    for node, lst in steps.items():
        v = np.array([d for d, _ in lst])
        thr = v.mean() + 3 * v.std()
        so[node] = sorted({s for d, s in lst if d > thr}, key=int), int((v > thr).sum())
    res["step_outliers"] = so
    # Dataloader: distinct pids per second (per window), median
    parallel = []
    for w in range(n_win):
        a, b = T0 + w * S, T0 + (w + 1) * S
        per_sec = {}
        for e in fw:
            if e["phase"] in ("DataLoaderWorker", "DataLoaderIter") and not (e["end"] < a or b < e["start"]):
                per_sec.setdefault(int(e["start"] / 1e6), set()).add(e["args"].get("pid"))
        parallel += [len(s) for s in per_sec.values()]
    res["dataloaders_median"] = int(np.median(parallel)) if parallel else None
    init = [e for e in evs if e["phase"] == "DataLoaderIterInitialize"]
    res["num_workers"] = sorted({e["args"]["num_workers"] for e in init})
    res["pin_memory"] = sorted({e["args"]["pin_memory"] for e in init})
    first = min(e["start"] for e in evs if e["name"].startswith("Step:ModeKeys"))
    res["init_s"] = first / 1e6 - min(r["Timestamp"] for r in recs)
    return res


# ------------------------------------------------------------------------------------ fixtures

@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("synth_a")
    st = generate(d, scenario=SMALL_SC, **SMALL)
    return str(d), st


# ------------------------------------------------------------------------------------ tests

def test_deterministic_byte_identical(small, tmp_path):
    d1, _ = small
    generate(tmp_path, scenario=SMALL_SC, **SMALL)
    h1, h2 = tree_hashes(d1), tree_hashes(str(tmp_path))
    assert h1 == h2
    assert len(h1) > 10


def test_seed_changes_data(small, tmp_path):
    d1, _ = small
    generate(tmp_path, scenario=SMALL_SC, **{**SMALL, "seed": 8})
    assert tree_hashes(d1) != tree_hashes(str(tmp_path))


def test_node_subset_gives_same_node_data(small, tmp_path):
    d1, _ = small
    generate(tmp_path, scenario=SMALL_SC, node_subset=(1,), **SMALL)
    h1, h2 = tree_hashes(d1), tree_hashes(str(tmp_path))
    algo2 = {k: v for k, v in h1.items() if "algo-2" in k}
    assert algo2 and all(h2[k] == v for k, v in algo2.items())
    assert not any("algo-1" in k for k in h2)


def test_system_lines_parse_with_fields_and_vocabulary(small):
    d, st = small
    recs = load_system(d)
    assert len(recs) == st.system_records
    names_seen = set()
    for r in recs:
        assert list(r) == FIELDS
        assert r["Type"] in TYPES
        assert isinstance(r["Value"], float) and r["Value"] >= 0
        assert isinstance(r["Timestamp"], float)
        assert re.fullmatch(r"algo-[12]", r["NodeId"])
        if r["Type"] == "cpu":
            assert re.fullmatch(r"cpu[0-2]", r["Name"]) and r["Dimension"] in ("CPUUtilization", "I/OWaitPercentage")
            assert r["Value"] <= 100
        elif r["Type"] == "gpu":
            assert re.fullmatch(r"gpu[01]", r["Name"])
            assert r["Dimension"] in ("GPUUtilization", "GPUMemoryUtilization")
            assert r["Value"] <= 100 and r["Value"] == int(r["Value"])
        else:
            assert (r["Type"], r["Name"], r["Dimension"]) in VOCAB
        names_seen.add((r["Type"], r["Name"], r["Dimension"]))
    assert len(names_seen) == records_per_tick(3, 2) == 2 * 3 + 2 * 2 + 8


def test_records_per_tick_node_minute(small):
    d, st = small
    rpt = records_per_tick(3, 2)
    assert st.ticks_per_node == 150 * 1000 // 500
    assert st.system_records == 2 * st.ticks_per_node * rpt
    groups = ticks(load_system(d))
    assert len(groups) == 2 * st.ticks_per_node
    for (node, _), rs in groups.items():
        assert len(rs) == rpt
        assert {r["NodeId"] for r in rs} == {node}
        spread = max(r["Timestamp"] for r in rs) - min(r["Timestamp"] for r in rs)
        assert 0.003 < spread < 0.02  # a few ms between record types
        by_type = defaultdict(set)
        for r in rs:
            by_type[r["Type"]].add(r["Timestamp"])
        assert all(len(v) == 1 for v in by_type.values())  # all cores / all GPUs share one ts
    # per file: every line of a minute file lies in that minute
    for p in system_files(d):
        key = int(SYS_RE.match(p).group(1))
        with open(p) as fh:
            lines = [json.loads(x) for x in fh]
        assert len(lines) % rpt == 0
        assert all(key <= r["Timestamp"] < key + 60 for r in lines)
        assert len(lines) // rpt <= 120


def test_file_layout_matches_spec(small):
    d, st = small
    files = system_files(d)
    assert len(files) == st.system_files == 2 * 3  # 150 s from a minute boundary -> 3 minutes x 2 nodes
    for p in files:
        assert SYS_RE.match(p)
        rel = os.path.relpath(p, d).split(os.sep)
        assert rel[:2] == ["system", "incremental"] and HOUR_RE.match(rel[2])
        m = SYS_NAME_RE.match(rel[3])
        assert m and int(m.group(1)) % 60 == 0
        assert rel[2] == __import__("time").strftime("%Y%m%d%H", __import__("time").gmtime(int(m.group(1))))
    assert os.path.isfile(os.path.join(d, "system", "training_job_end.ts"))
    tfs = trace_files(d)
    assert len(tfs) == st.trace_files
    for p in tfs:
        rel = os.path.relpath(p, d).split(os.sep)
        assert rel[:2] == ["framework", "pevents"] and HOUR_RE.match(rel[2])
        m = TRACE_NAME_RE.match(rel[3])
        assert m, rel[3]
        assert m.group(2) == "27" and m.group(3) in ("1", "2")
        assert len(rel[3].split("_")) >= 3 and "pevents" in p


def test_trace_files_valid_with_metadata_and_end_key(small):
    d, _ = small
    for p in trace_files(d):
        with open(p) as fh:
            arr = json.load(fh)
        assert isinstance(arr, list) and len(arr) > 4
        assert arr[0]["name"] == "process_name" and arr[0]["pid"] == 0 and arr[0]["ph"] == "M"
        base = arr[0]["args"]["start_time_since_epoch_in_micros"]
        assert isinstance(base, int)
        assert arr[1] == {"name": "process_sort_index", "ph": "M", "pid": 0, "args": {"sort_index": 0}}
        declared = {}
        end_max = 0
        for e in arr[2:]:
            if e["ph"] == "M":
                if e["name"] == "process_name":
                    declared[e["pid"]] = e["args"]["name"]
                continue
            assert e["ph"] == "X" and e["pid"] in declared  # phase declared before use
            assert e["dur"] >= 0
            end_max = max(end_max, base + e["ts"] + e["dur"])
        # file name key = end time of the last event in the file
        assert int(os.path.basename(p).split("_")[0]) == end_max


def test_trace_content(small):
    d, st = small
    evs = load_trace_events(d)
    phases = {e["phase"] for e in evs}
    assert {"Step:ModeKeys.TRAIN", "Step:ModeKeys.EVAL", "Forward", "Backward(post-forward)",
            "Forward-SubModuleInternal", "Backward-SubModuleInternal", "cpu_functions", "gpu_functions-dev:0",
            "DataLoaderIterInitialize", "DataLoaderIter", "DataLoaderWorker"} <= phases
    for node, p in st.planted["nodes"].items():
        nid = p["framework_node_id"]
        tr = [e for e in evs if e["node"] == nid and e["phase"] == "Step:ModeKeys.TRAIN"]
        ev = [e for e in evs if e["node"] == nid and e["phase"] == "Step:ModeKeys.EVAL"]
        assert len(tr) == p["train_steps"] and len(ev) == p["eval_steps"]
        assert [e["args"]["step_num"] for e in sorted(tr, key=lambda e: e["start"])] == \
            [str(i) for i in range(len(tr))]
        assert all(e["args"]["pid"] == p["pid"] for e in tr)
        assert min(e["start"] for e in tr) == p["first_step_us"]
        cpu = [e for e in evs if e["node"] == nid and e["phase"] == "cpu_functions"]
        assert cpu and all(isinstance(e["args"]["step_num"], int) and e["args"]["device"] == "cpu" for e in cpu)
        workers = {e["args"]["pid"] for e in evs if e["node"] == nid and e["phase"] == "DataLoaderWorker"}
        assert len(workers) == 3
        init = [e for e in evs if e["node"] == nid and e["phase"] == "DataLoaderIterInitialize"]
        assert init and all(e["args"] == {"num_workers": 3, "pin_memory": False} for e in init)
    # initialization length before the first step = init_s (+ node skew of 0.25 s per node)
    t0 = st.planted["job_start_us"]
    assert st.planted["nodes"]["algo-1"]["first_step_us"] - t0 == pytest.approx(20e6, abs=0.05e6)


def test_planted_cpu_bottleneck_and_iowait_exact(small):
    d, st = small
    groups = ticks(load_system(d))
    for node in ("algo-1", "algo-2"):
        cpu_b = io_s = 0
        n = 0
        for (nd, _), rs in groups.items():
            if nd != node:
                continue
            n += 1
            g_low = any(r["Dimension"] == "GPUUtilization" and r["Value"] < 10 for r in rs)
            c_hi = any(r["Dimension"] == "CPUUtilization" and r["Value"] > 90 for r in rs)
            cpu_b += g_low and c_hi
            io_s += any(r["Dimension"] == "I/OWaitPercentage" and r["Value"] > 50 for r in rs)
        planted = st.planted["nodes"][node]
        assert n == st.ticks_per_node == 300
        assert cpu_b == planted["cpu_bottleneck_ticks"] == round(0.3 * 300)
        assert cpu_b / n == 0.3
        assert io_s == planted["iowait_spike_ticks"] == 30


def test_planted_step_outliers_exact(small):
    d, st = small
    evs = load_trace_events(d)
    for node, p in st.planted["nodes"].items():
        v = [(e["end"] - e["start"]) / 1e6 for e in evs
             if e["node"] == p["framework_node_id"] and e["name"] == "Step:ModeKeys.TRAIN"]
        v = np.array(v)
        thr = v.mean() + 3 * v.std()
        nums = sorted((e["args"]["step_num"] for e in evs if e["node"] == p["framework_node_id"]
                       and e["name"] == "Step:ModeKeys.TRAIN" and (e["end"] - e["start"]) / 1e6 > thr), key=int)
        assert len(nums) == 4 == len(p["step_outliers"])
        assert nums == p["step_outliers"]
        # no planted outlier crosses a minute boundary
        for e in evs:
            if e["node"] == p["framework_node_id"] and e["name"] == "Step:ModeKeys.TRAIN" \
                    and e["args"]["step_num"] in nums:
                assert e["start"] // 60_000_000 == e["end"] // 60_000_000


def test_planted_gpu_memory_jump(small):
    d, st = small
    recs = load_system(d)
    v = [r["Value"] for r in recs if r["NodeId"] == "algo-1" and r["Name"] == "gpu0"
         and r["Dimension"] == "GPUMemoryUtilization"]
    (k0,) = st.planted["nodes"]["algo-1"]["gpu_memory_jump_ticks"]["gpu0"]
    assert k0 == int(np.searchsorted(np.arange(300) * 0.5 + 0.137, 0.6 * 150))
    assert min(v[k0:k0 + 40]) - max(v[k0 - 12:k0]) > 50  # +62 pulse of 20 s
    # where the moving-average check (B.5, ignoring patience) fires: the 10 samples after the
    # rising edge (cur = mean of the last 10, prev = mean of v[-11:-2]; a +62 step gives diffs
    # 6.2, 12.4, 11.7, ..., 6.9, then 0) and nowhere else once the model is resident
    fired = [i for i in range(12, len(v)) if np.mean(v[i - 9:i + 1]) - np.mean(v[i - 10:i - 1]) > 5]
    resident = [i for i in fired if i > 60]
    assert resident == list(range(k0, k0 + 10))
    # other GPUs have no pulse
    other = [r["Value"] for r in recs if r["NodeId"] == "algo-2" and r["Dimension"] == "GPUMemoryUtilization"]
    assert max(other) < 40


def test_data_wait_knob_tells_one_story(tmp_path):
    """``data_wait_ms``: every step's GetNext call waits for its batch, and the samples taken inside the training
    loop with a GPU idle while a core is saturated are exactly those taken during a GetNext call (re-read from the
    files); outside the loop the bottleneck samples keep their planted fraction."""
    sc = Scenario(init_s=10, final_s=2, step_ms=300, gap_ms=10, data_wait_ms=400, cpu_bottleneck_fraction=0.5,
                  dataloader_workers=1, gpu_idle_fraction=(0.0,))
    st = generate(tmp_path, nodes=1, cores=4, gpus=2, duration_s=90, scenario=sc)
    evs = load_trace_events(str(tmp_path))
    calls = sorted((e["start"], e["end"]) for e in evs if e["name"] == "DataLoaderIter::GetNext")
    steps = sorted((e["start"], e["end"]) for e in evs if e["phase"] == "Step:ModeKeys.TRAIN")
    assert len(calls) == len(steps) == st.planted["nodes"]["algo-1"]["train_steps"]
    assert np.mean([b - a for a, b in calls]) == pytest.approx(410_000, rel=0.05)  # gap 10 ms + wait 400 ms
    first, last = steps[0][0], max(b for _, b in steps)
    starts = np.array([a for a, _ in calls])
    inside_loop = outside = loop_ticks = 0
    groups = ticks(load_system(str(tmp_path)))
    for rs in groups.values():
        at = next(r["Timestamp"] for r in rs if r["Dimension"] == "GPUUtilization") * 1e6
        bottleneck = any(r["Dimension"] == "GPUUtilization" and r["Value"] < 10 for r in rs) and \
            any(r["Dimension"] == "CPUUtilization" and r["Value"] > 90 for r in rs)
        if first <= at < last:
            i = int(np.searchsorted(starts, at, side="right")) - 1
            waiting = i >= 0 and calls[i][0] <= at < calls[i][1]
            assert bottleneck == waiting, at
            inside_loop += bottleneck
            loop_ticks += 1
        else:
            outside += bottleneck
    assert inside_loop / loop_ticks == pytest.approx(410 / 720, abs=0.06)  # the share of the loop spent waiting
    assert inside_loop + outside == st.planted["nodes"]["algo-1"]["cpu_bottleneck_ticks"]
    assert abs(outside - 0.5 * (len(groups) - loop_ticks)) <= 1


def test_gpu_imbalance_knob(tmp_path):
    sc = Scenario(init_s=5, gpu_offsets=((0, 1, -40.0),), gpu_idle_fraction=(0.0,))
    generate(tmp_path, nodes=1, cores=2, gpus=2, duration_s=120, scenario=sc, framework=False)
    recs = load_system(str(tmp_path))
    g = defaultdict(list)
    for r in recs:
        if r["Dimension"] == "GPUUtilization" and r["Timestamp"] - recs[0]["Timestamp"] > 10:
            g[r["Name"]].append(r["Value"])
    assert np.median(g["gpu0"]) == pytest.approx(88, abs=2)
    assert np.median(g["gpu1"]) == pytest.approx(48, abs=2)


def test_no_framework_and_cpu_only(tmp_path):
    st = generate(tmp_path, nodes=1, cores=2, gpus=0, duration_s=61, framework=False)
    assert st.trace_files == 0 and not os.path.exists(os.path.join(tmp_path, "framework"))
    recs = load_system(str(tmp_path))
    assert len(recs) == 122 * records_per_tick(2, 0)
    assert not any(r["Type"] == "gpu" for r in recs)


# ------------------------------------------------------------------------------------ sample_data

def test_sample_data_is_what_the_script_makes(tmp_path):
    from make_sample_data import SAMPLE_KWARGS

    generate(tmp_path, **SAMPLE_KWARGS)
    committed = {k: v for k, v in tree_hashes(SAMPLE).items() if not k.endswith("README.md")}
    assert committed == tree_hashes(str(tmp_path))
    size = sum(os.path.getsize(os.path.join(SAMPLE, k)) for k in committed)
    assert size < 10_500_000


@pytest.fixture(scope="module")
def sample_analysis():
    return analyse(SAMPLE)


def test_sample_rules_expected_to_fire(sample_analysis):
    a = sample_analysis
    # CPUBottleneck: > 50 % of snapshots, beyond patience 1000
    assert a["snapshots"] > 1000 and a["cpu_bottlenecks"] / a["snapshots"] > 0.5
    # IOBottleneck must NOT fire
    assert a["io_bottlenecks"] / a["snapshots"] < 0.1
    # LowGPUUtilization: every GPU violates (fluctuating: p95 > 70, p5 < 10)
    assert all(v["violations"] >= 2 and v["p95"] > 70 and v["p5"] < 10 for v in a["lowgpu"].values())
    # GPUMemoryIncrease on algo-1/gpu0 only, after patience
    mv = a["gpu_memory_violations"]
    assert len(mv[("algo-1", "gpu0")]) == 20 and all(not v for k, v in mv.items() if k != ("algo-1", "gpu0"))
    # StepOutlier: 15 > n_outliers (10) on both framework nodes
    assert {k: v[1] for k, v in a["step_outliers"].items()} == {"algo-1-27": 15, "algo-2-27": 15}
    # Dataloader: median distinct pids per second 2 (main 27 + worker 67, same pids on both
    # nodes) < 0.7 * 4 cores
    assert a["dataloaders_median"] == 2 and a["num_workers"] == [1] and a["pin_memory"] == [False]
    # LoadBalancing (intended pairwise): algo-1 imbalanced, algo-2 balanced
    assert a["load_balancing"][("algo-1", "gpu0", "gpu1")] > 0.2
    assert a["load_balancing"][("algo-2", "gpu0", "gpu1")] < 0.2
    # BatchSize must NOT fire (GPU p95 > 70), MaxInitializationTime must NOT (90 s < 20 min)
    assert all(v["p95"] > 70 for v in a["lowgpu"].values())
    assert 89 < a["init_s"] < 92


def test_fast_interval_keeps_instants_inside_their_minute(tmp_path):
    st = generate(tmp_path, nodes=3, cores=2, gpus=1, duration_s=130, interval_ms=100, framework=False)
    assert st.ticks_per_node == 1300
    for p in system_files(str(tmp_path)):
        key = int(SYS_RE.match(p).group(1))
        with open(p) as fh:
            assert all(key <= json.loads(x)["Timestamp"] < key + 60 for x in fh)
    assert len(ticks(load_system(str(tmp_path)))) == 3 * 1300
