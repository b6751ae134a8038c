"""JAX and TensorFlow profiler output (XSpace, ``<host>.xplane.pb``): the format table's second row.

The real recordings (tests/recordings/jax-tf, README there) were made here with the CPU builds of both
frameworks by scripts that time every step themselves (``truth.json``). Tolerances: a step as the
profile shows it is the step annotation, which wraps the script's two ``perf_counter`` calls; what lies
between them and the annotation's edges is a few Python statements (8-30 µs measured, more on a
loaded machine), so each step is held to 0.5 ms. The input pipeline: see each test.

The synthetic XSpace files below are written with a tiny protobuf encoder of the test's own, for what a
CPU-only recording cannot hold (device planes) and for damage.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from reportgen.trace_analysis import analyze_job, find_traces
from reportgen.readers.trace_files import read_trace_file, reader_of
from reportgen.readers.kineto_trace import read_trace
from reportgen.readers.trace_model import CPU_OP, KERNEL, MEMCPY, PYTHON
from reportgen.readers.xspace_trace import read_xspace
from reportgen.problems import ProblemLog
from reportgen.sources.layout import TRACE_FORMATS, trace_format, traces_named
from tests.support.paths import ROOT
from tests.support.xspace_writer import int_field as _int, len_field as _len, plane as _plane, space as _space, varint as _varint

RUNS = ROOT / "tests" / "recordings" / "jax-tf"
XSPACE = "XSpace (JAX / TensorFlow profiler)"


def _truth(name: str) -> dict:
    return json.loads((RUNS / name / "truth.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def jobs():
    cache = {}

    def run(name):
        if name not in cache:
            cache[name] = analyze_job(find_traces(RUNS / name))
        return cache[name]
    return run


@pytest.mark.parametrize("name", ["jax-cpu", "tf-cpu"])
def test_a_real_recording_gives_the_steps_the_script_timed(jobs, name):
    doc, problems = jobs(name)
    truth = _truth(name)
    assert problems.total == 0
    assert doc["formats"] == [XSPACE] and list(doc["ranks"]) == ["vm"]  # one host, named after its file
    rank = doc["ranks"]["vm"]
    steps = rank["steps"]
    assert [s["step"] for s in steps] == list(range(truth["steps"]))
    for got, want in zip([s["dur_ms"] for s in steps], truth["step_ms"]):
        assert got == pytest.approx(want, abs=0.5)
    assert rank["step_stats_ms"]["p50"] == pytest.approx(truth["median_step_ms"], abs=0.5)


def test_jax_input_share_is_the_scripts_next_calls(jobs):
    doc, _ = jobs("jax-cpu")
    truth = _truth("jax-cpu")
    loader = doc["ranks"]["vm"]["dataloader"]
    # the Python tracer times the very next() call the script times: 545.0 ms vs 545.2 ms measured
    assert loader["in_steps_ms"] == pytest.approx(sum(truth["load_ms"]), rel=0.01)
    assert loader["step_share"] == pytest.approx(truth["input_share"], abs=0.01)
    assert loader["count"] == truth["steps"] and truth["input_share"] > 0.1


def test_tensorflow_input_share_is_iterator_get_next_on_the_training_thread(jobs):
    doc, _ = jobs("tf-cpu")
    truth = _truth("tf-cpu")
    loader = doc["ranks"]["vm"]["dataloader"]
    load = sum(truth["load_ms"])
    # IteratorGetNext is the op inside the script's next(it); the Python around it (the iterator's
    # __next__, 0.3-0.55 ms a step measured here) is no TF op, so the trace shows a little less: 89.0 ms
    # of the script's 100.4 ms (share 0.218 vs 0.246).
    assert load - 0.6 * truth["steps"] <= loader["in_steps_ms"] <= load
    assert loader["step_share"] == pytest.approx(truth["input_share"], abs=0.6 * truth["steps"] / sum(truth["step_ms"]))
    assert loader["count"] == truth["steps"] and loader["step_share"] > 0.15  # the planted slow map shows


@pytest.mark.parametrize("name,op", [("jax-cpu", "PjitFunction(train_step)"), ("tf-cpu", "EagerLocalExecute: __inference_train_step")])
def test_host_operators_are_ranked_and_python_frames_are_not_operators(jobs, name, op):
    doc, _ = jobs(name)
    rank = doc["ranks"]["vm"]
    names = [o["name"] for o in rank["cpu_ops"]["top"]]
    assert any(n.startswith(op) for n in names), names
    assert not any(n.startswith("$") or n.startswith("ProfilerStep#") for n in names)
    assert rank["cpu_ops"]["count"] > 100
    # CPU-only: no device plane, so no kernels and no GPU time (the page says so)
    assert rank["kernels"]["count"] == 0 and rank["gpu"]["has_gpu_activity"] is False and rank["devices"] == []


def test_jax_json_trace_beside_its_xspace_is_read_once():
    found = find_traces(RUNS / "jax-cpu")
    assert [p.name for p in found] == ["vm.xplane.pb.gz"]
    assert any(p.name == "vm.trace.json.gz" for p in (RUNS / "jax-cpu").rglob("*"))


def test_the_format_table_names_a_reader_per_row():
    assert [fmt.name for fmt in TRACE_FORMATS] == ["PyTorch profiler (Kineto)", XSPACE]
    assert reader_of(TRACE_FORMATS[0]) is read_trace and reader_of(TRACE_FORMATS[1]) is read_xspace
    assert trace_format(Path("a/vm_1.123456789012.pt.trace.json.gz")) is TRACE_FORMATS[0]
    assert trace_format(Path("plugins/profile/run/host.xplane.pb")) is TRACE_FORMATS[1]
    assert trace_format(Path("notes.txt")) is None
    # messages keep their words for Kineto-only sets and name the formats otherwise
    assert traces_named([Path("w.1234567890123.pt.trace.json")]) == "PyTorch profiler"
    assert traces_named([Path("h.xplane.pb"), Path("h2.xplane.pb.gz")]) == XSPACE
    assert traces_named([Path("h.xplane.pb"), Path("r.pt.trace.json")]) == f"PyTorch profiler (Kineto) and {XSPACE}"


# ------------------------------------------------------------------ synthetic XSpace (our own encoder)


MS = 10**9  # picoseconds in a millisecond
START_NS = 1_795_000_000_000_000_000


def _gpu_space() -> bytes:
    step = _len(4, _int(1, 1) + _int(4, 7))  # step_num = 7
    host = _plane("/host:CPU", [("python", 0, [(1, 0, 10 * MS, step), (2, 1 * MS, 2 * MS, b""),
                                              (3, 3 * MS, 1 * MS, b"")])],
                  {1: "train", 2: "IteratorGetNext", 3: "$script.py:9 loop"}, {1: "step_num"})
    kernels = [(1, 4 * MS, 2 * MS, b""), (2, 7 * MS, 1 * MS, b"")]
    gpu = _plane("/device:GPU:0", [("Stream #14(Compute)", 0, kernels), ("XLA Ops", 0, kernels)],
                 {1: "fusion_1", 2: "MemcpyH2D"})
    env = _plane("Task Environment", [], {}, {1: "profile_start_time"},
                 plane_stats=_len(6, _int(1, 1) + _int(3, START_NS)))
    return _space(env, host, gpu)


def test_device_planes_give_kernels_and_copies_once(tmp_path):
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(_gpu_space())
    doc, problems = analyze_job(find_traces(tmp_path))
    assert problems.total == 0
    rank = doc["ranks"]["host"]
    assert [s["step"] for s in rank["steps"]] == [7] and rank["steps"][0]["dur_ms"] == pytest.approx(10.0)
    assert rank["kernels"]["count"] == 1 and rank["kernels"]["top"][0]["name"] == "fusion_1"  # XLA Ops not twice
    assert rank["kernels"]["total_ms"] == pytest.approx(2.0) and rank["gpu_mix_ms"]["memcpy"] == pytest.approx(1.0)
    assert rank["gpu"]["active_ms"] == pytest.approx(3.0) and rank["gpu_ids"] == [0]
    assert rank["devices"] == ["/device:GPU:0"]
    assert rank["dataloader"]["step_share"] == pytest.approx(0.2)
    trace = read_xspace(path)
    assert trace.start_us[0] == pytest.approx(START_NS / 1000.0)  # relative lines made absolute
    by_name = {trace.names[n]: int(c) for n, c in zip(trace.name, trace.cat)}
    assert by_name == {"ProfilerStep#7": 1, "IteratorGetNext": CPU_OP, "$script.py:9 loop": PYTHON,
                       "fusion_1": KERNEL, "MemcpyH2D": MEMCPY}


def test_a_gzipd_xspace_reads_as_the_plain_one(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "host.xplane.pb").write_bytes(_gpu_space())
    (tmp_path / "b" / "host.xplane.pb.gz").write_bytes(gzip.compress(_gpu_space()))
    a, _ = analyze_job(find_traces(tmp_path / "a"))
    b, _ = analyze_job(find_traces(tmp_path / "b"))
    ra, rb = a["ranks"]["host"], b["ranks"]["host"]
    assert {k: v for k, v in ra.items() if k not in ("file", "files")} == \
        {k: v for k, v in rb.items() if k not in ("file", "files")}


@pytest.mark.parametrize("cut", [1, 7, 40, 97, 150])
def test_a_cut_file_keeps_what_came_before_and_says_so(tmp_path, cut):
    whole = _gpu_space()
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(whole[: len(whole) - cut])
    problems = ProblemLog()
    trace = read_trace_file(path, problems)
    assert trace.complete is False and problems.total >= 1
    assert all("damaged" in p.reason or "no complete events" in p.reason for p in problems.items)
    assert trace.cat.size <= 6


@pytest.mark.parametrize("content,reason", [(b"", "not an XSpace protobuf (no planes)"),
                                            (b"\xff" * 64, "XSpace protobuf damaged"),
                                            (b'{"traceEvents": []}', "XSpace protobuf damaged")])
def test_garbage_is_counted_never_raised(tmp_path, content, reason):
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(content)
    doc, problems = analyze_job([path])
    assert doc["ranks"]["host"]["events"] == 0
    assert any(p.reason.startswith(reason) for p in problems.items), problems.items


def test_a_gzip_bomb_is_cut_at_the_cap(tmp_path, monkeypatch):
    monkeypatch.setenv("REPORTGEN_XSPACE_MAX_MB", "1")
    path = tmp_path / "host.xplane.pb.gz"
    path.write_bytes(gzip.compress(_gpu_space() + b"\x00" * (4 << 20)))
    problems = ProblemLog()
    read_xspace(path, problems)
    assert any("cut at 1 MiB" in p.reason for p in problems.items), problems.items


def test_negative_durations_and_unknown_metadata_are_handled(tmp_path):
    host = _plane("/host:CPU", [("t", START_NS, [(1, 0, -5, b""), (9, 0, MS, b"")])], {1: "op"})
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(_space(host))
    problems = ProblemLog()
    trace = read_xspace(path, problems)
    assert trace.names == ["<event 9>"] and problems.counts["negative duration (dropped)"] == 1


def test_the_encoder_writes_protobufs_documented_encoding():
    # protobuf's documented example: field 1 = 150 is 08 96 01; -1 as int64 is ten bytes
    assert _int(1, 150) == bytes([0x08, 0x96, 0x01]) and _varint(-1) == b"\xff" * 9 + b"\x01"


# ------------------------------------------------------------------ the whole report, as a user generates it


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    from reportgen.pipeline import generate

    out = {}
    for name in ("jax-cpu", "tf-cpu"):
        html = tmp_path_factory.mktemp(name) / "report.html"
        generate(str(RUNS / name), html)
        out[name] = (json.loads(html.with_suffix(".json").read_text()), html.read_text(encoding="utf-8"))
    return out


@pytest.mark.parametrize("name", ["jax-cpu", "tf-cpu"])
def test_a_recording_gives_a_report_with_ranks_steps_operators_and_a_diagnosis(reports, name):
    doc, html = reports[name]
    truth = _truth(name)
    ranks = doc["sections"]["gpu-kernels-operators"]["ranks"]
    assert len(ranks) == 1
    stats = doc["sections"]["step-duration-analysis"]["nodes"]["rank-vm"]["stats"]
    assert stats["p50"] == pytest.approx(truth["median_step_ms"] / 1000.0, abs=0.0005)
    assert stats["max"] == pytest.approx(max(truth["step_ms"]) / 1000.0, abs=0.0005)
    assert doc["sections"]["dataloading-analysis"]["trace_dataloader_share"] > 0.1
    # the diagnosis judged the steps: on this loaded machine both runs had slow steps the scripts saw too
    slowest = max(range(truth["steps"]), key=lambda i: truth["step_ms"][i])
    finding = next(f for f in doc["diagnosis"]["findings"] if f["cause"] == "step-outliers")
    assert f"slowest: step {slowest}, {max(truth['step_ms']) / 1000:.2f} s" in finding["evidence"]
    assert "XSpace (JAX / TensorFlow profiler) trace file(s) of 1 rank(s)" in html
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, json.loads((ROOT / "reportgen" / "schemas" / "report.schema.json").read_text()))
    assert "have no device plane (a CPU-only run)" in html
    # #49: a JAX / TensorFlow report names its traces as such, never as PyTorch's, and the job by its folder
    assert "This report summarises JAX / TensorFlow profiler traces, one per rank" in html
    assert "PyTorch profiler traces" not in html and doc["job"]["name"] == name
    assert doc["job"]["description"].endswith("report made from the JAX / TensorFlow profiler traces")


def test_mutated_real_files_never_raise_and_say_what_they_lost(tmp_path):
    import random

    whole = gzip.decompress(next((RUNS / "tf-cpu").rglob("*.xplane.pb.gz")).read_bytes())
    rng = random.Random(31)
    for i in range(40):
        data = bytearray(whole)
        if i % 2:
            for _ in range(rng.randint(1, 20)):  # flipped bytes
                data[rng.randrange(len(data))] = rng.randrange(256)
        else:
            del data[rng.randrange(len(data)):]  # cut anywhere
        path = tmp_path / f"m{i}.xplane.pb"
        path.write_bytes(bytes(data))
        problems = ProblemLog()
        trace = read_xspace(path, problems)
        assert trace.cat.size == trace.start_us.size == trace.tid.size
        assert trace.complete or problems.total >= 1  # a damaged file says so
        if not trace.complete:
            assert any("damaged" in p.reason or "no planes" in p.reason or "no complete events" in p.reason
                       for p in problems.items), problems.items


def test_compare_puts_a_jax_and_a_tensorflow_run_side_by_side(tmp_path):
    from reportgen.compare.run import compare

    compare(str(RUNS / "jax-cpu"), str(RUNS / "tf-cpu"), tmp_path / "compare.html")
    doc = json.loads((tmp_path / "compare.json").read_text())
    traces = doc["sections"]["step-durations"]["traces"]
    for side, name in (("a", "jax-cpu"), ("b", "tf-cpu")):
        truth = _truth(name)
        assert traces[side]["profiled_steps"] == truth["steps"] and traces[side]["step_numbers"] == [0, truth["steps"] - 1]
        assert traces[side]["mean_step_ms"] == pytest.approx(sum(truth["step_ms"]) / truth["steps"], abs=0.5)
    assert traces["a"]["dataloader_share"] == pytest.approx(_truth("jax-cpu")["input_share"], abs=0.01)
    rows = doc["sections"]["operators"]["traces"]["rows"]
    assert any(r["a_ms_per_step"] and r["operator"].startswith("ThunkExecutor") for r in rows)
    assert any(r["b_ms_per_step"] and r["operator"] == "EagerExecute" for r in rows)


def test_collectives_are_xla_and_tensorflow_ones_not_tensor_broadcasts(jobs, tmp_path):
    doc, _ = jobs("jax-cpu")  # XLA's broadcast_maximum_fusion runs on the host: no collective
    assert doc["ranks"]["vm"]["collectives"]["count"] == 0
    ops = {1: "broadcast_maximum_fusion", 2: "EagerLocalExecute: BroadcastTo", 3: "all-reduce.1",
           4: "EagerLocalExecute: CollectiveReduceV2", 5: "train"}
    step = _len(4, _int(1, 1) + _int(4, 0))
    events = [(5, 0, 10 * MS, step), (1, 1 * MS, 1 * MS, b""), (2, 2 * MS, 1 * MS, b""), (3, 4 * MS, 2 * MS, b""),
              (4, 7 * MS, 1 * MS, b"")]
    (tmp_path / "h.xplane.pb").write_bytes(_space(_plane("/host:CPU", [("python", START_NS, events)], ops,
                                                         {1: "step_num"})))
    rank = analyze_job(find_traces(tmp_path))[0]["ranks"]["h"]
    got = rank["collectives"]
    assert got["count"] == 2 and sorted(got["names"]) == ["EagerLocalExecute: CollectiveReduceV2", "all-reduce.1"]
    assert got["step_share"] == pytest.approx(0.3) and got["source"] == "CPU-side collectives"
