"""System ingest on a Dask cluster (``--scheduler``) and the ``--incremental`` record cache.

The profile (``bench_profile``) is the medium benchmark profile reduced so the module runs in well
under a minute: the benchmark's scenario (``BENCH_SCENARIO`` of benchmarks/generate_data.py) and
shape of medium — 4 nodes, GPUs and CPU cores on each, 500 ms sampling, framework traces — but 8
cores, 2 GPUs and 20 minutes instead of 32 cores, 4 GPUs and 2 hours (80 system files, ~290 k
records, ~35 MB instead of 480 files, 4.6 M records, 570 MB). The real medium profile was run
through both paths once by hand; benchmarks/HISTORY.md records that its rule JSONs are byte-equal.

The cluster is a local one of 2 worker processes (1 thread each) started by the fixture and closed
after the module; ``analyze`` reaches it through its ``tcp://`` address, the way
``--scheduler tcp://host:8786`` reaches an existing cluster.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from reportgen.engine import analyze  # noqa: E402
from reportgen.cluster.client import dask_client  # noqa: E402
from reportgen.cluster.scheduler import parse_scheduler  # noqa: E402
from reportgen.readers.distributed import read_pieces  # noqa: E402
from reportgen.problems import ProblemLog  # noqa: E402
from reportgen.readers.system import list_system_files  # noqa: E402
from reportgen.errors import InputError  # noqa: E402
from reportgen.rulebook import RULE_ORDER  # noqa: E402
from tests.support.paths import ROOT

REPO = ROOT


def _bench_scenario():
    spec = importlib.util.spec_from_file_location("_bench_generate_data", REPO / "benchmarks" / "generate_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.BENCH_SCENARIO


def make_profile(folder: Path, *, nodes=4, cores=8, gpus=2, duration_s=1200) -> Path:
    from testdata.synthetic import generate

    generate(folder, nodes=nodes, cores=cores, gpus=gpus, duration_s=duration_s, interval_ms=500, seed=3,
             scenario=_bench_scenario())
    return folder


@pytest.fixture(scope="module")
def bench_profile(tmp_path_factory) -> Path:
    return make_profile(tmp_path_factory.mktemp("bench") / "profile")


@pytest.fixture(scope="module")
def cluster():
    from dask.distributed import LocalCluster

    import logging

    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                     silence_logs=logging.ERROR)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def single(bench_profile, tmp_path_factory):
    """The single-machine path's outputs for the bench profile."""
    out = tmp_path_factory.mktemp("single")
    analyze(bench_profile, out)
    return out


def outputs(folder: Path) -> dict[str, bytes]:
    files = sorted((folder / "profiler-reports").glob("*.json"))
    assert len(files) == len(RULE_ORDER)
    got = {f.name: f.read_bytes() for f in files}
    for name in ("data-quality.json", "timeline.json"):
        got[name] = (folder / name).read_bytes()
    return got


@pytest.mark.slow
def test_dask_gives_byte_identical_rule_outputs(bench_profile, single, cluster, tmp_path):
    result = analyze(bench_profile, tmp_path, scheduler=cluster.scheduler_address)
    assert result.system_files == 80 and result.system_files_read == 80
    assert result.nodes == ["algo-1", "algo-2", "algo-3", "algo-4"]
    assert outputs(tmp_path) == outputs(single)
    # not a vacuous equality: the rules saw real data
    cpu = json.loads((single / "profiler-reports" / "CPUBottleneck.json").read_text())
    assert cpu["Datapoints"] > 1000


def test_pieces_run_on_the_workers_one_per_node(bench_profile, cluster):
    from dask.distributed import Client

    with Client(cluster.scheduler_address) as client:
        problems = ProblemLog()
        data, info = read_pieces(bench_profile, problems, client=client)
        worker_pids = set(client.run(os.getpid).values())
    assert info.pieces == 4 and info.cached_pieces == 0
    assert len(worker_pids) == 2 and os.getpid() not in worker_pids
    assert {s.worker_pid for s in info.stats} <= worker_pids
    assert sum(s.files for s in info.stats) == 80
    assert sum(s.bytes for s in info.stats) == sum(p.stat().st_size for _, p in list_system_files(bench_profile))
    assert problems.total == 0


def test_anomalies_and_foreign_node_records_match_single_machine(cluster, tmp_path):
    """A file named for algo-1 that also holds algo-2 records (the single path's restart case), a
    malformed line, an empty file and an out-of-range value: same rules and data-quality counts."""
    prof = make_profile(tmp_path / "p", nodes=2, cores=4, gpus=1, duration_s=300)
    files = [p for _, p in list_system_files(prof)]
    a1 = [p for p in files if ".algo-1." in p.name]
    a2 = [p for p in files if ".algo-2." in p.name]
    moved = a2[2].read_bytes().splitlines(keepends=True)
    a2[2].write_bytes(b"".join(moved[: len(moved) // 2]))
    with a1[3].open("ab") as f:
        f.writelines(moved[len(moved) // 2:])
    with a1[1].open("ab") as f:
        f.write(b'{"Type":"cpu","Name":"cpu0","Dimension":"CPUUtilization","Value":\n')
        f.write(b'{"Type":"cpu","Name":"cpu9","Dimension":"CPUUtilization","Value":140.0,"NodeId":"algo-1",'
                b'"Timestamp":1700000000.0}\n')
    empty = a2[0].with_name(a2[0].name.replace(a2[0].name.split(".")[0], str(int(a2[0].name.split(".")[0]) + 30)))
    empty.write_bytes(b"")

    single_out, dask_out = tmp_path / "single", tmp_path / "dask"
    s = analyze(prof, single_out)
    d = analyze(prof, dask_out, scheduler=cluster.scheduler_address)
    assert s.problems.total >= 3
    assert outputs(dask_out) == outputs(single_out)
    assert d.problems.counts == s.problems.counts


def _damage_traces(prof: Path) -> list[Path]:
    """A truncated trace (salvaged), a trace with B/E pairs and an unclosed B (the general path), an
    event stamped in 1970 (a clock jump) and a file that is not JSON, among the synthetic traces."""
    from reportgen.readers.framework import list_framework_files

    files = list_framework_files(prof)
    text = files[1].read_bytes()
    files[1].write_bytes(text[: len(text) * 2 // 3])
    folder = files[0].parent
    base = int(files[0].name.split("_")[0])
    (folder / f"{base + 5}_27-algo-1_pythontimeline.json").write_text(
        '[{"name": "process_name", "ph": "M", "pid": 3, "args": {"name": "Step:ModeKeys.TRAIN"}},'
        f'{{"name": "Step:ModeKeys.TRAIN", "ph": "B", "pid": 3, "ts": {base - 9_000_000}, "args": {{"step_num": 7}}}},'
        f'{{"name": "Step:ModeKeys.TRAIN", "ph": "E", "pid": 3, "ts": {base - 8_000_000}}},'
        f'{{"name": "open", "ph": "B", "pid": 3, "ts": {base - 7_000_000}}},'
        '{"name": "jump", "ph": "X", "pid": 3, "ts": 1000000000000000, "dur": 10}]')
    (folder / f"{base + 6}_27-algo-2_pythontimeline.json").write_bytes(b"\x00not json at all")
    return list_framework_files(prof)


def test_framework_traces_one_task_per_file_match_single_machine(cluster, tmp_path):
    """Every trace file is a task of its own on a worker (its columns come back, the client merges
    them in file order): the event table, the rule outputs, the timeline and data-quality.json are
    those of the single-machine read, damaged traces and a clock jump included."""
    from dask.distributed import Client

    from reportgen.readers.distributed import framework_listing, read_traces
    from reportgen.readers.framework import read_framework

    prof = make_profile(tmp_path / "p", nodes=2, cores=4, gpus=1, duration_s=300)
    traces = _damage_traces(prof)
    single_out, dask_out = tmp_path / "single", tmp_path / "dask"
    s = analyze(prof, single_out)
    d = analyze(prof, dask_out, scheduler=cluster.scheduler_address)
    assert outputs(dask_out) == outputs(single_out)
    assert d.n_events == s.n_events > 1000
    reasons = set(s.problems.counts)
    assert any("clock jump" in r for r in reasons) and len(reasons) >= 3, reasons
    assert d.problems.counts == s.problems.counts

    ref_problems, problems = ProblemLog(), ProblemLog()
    ref = read_framework(prof, ref_problems)
    with Client(cluster.scheduler_address) as client:
        listing = framework_listing(prof, problems)
        assert [rel for _, rel in listing] == [str(p.relative_to(prof)) for p in traces]
        events = read_traces(prof, problems, [rel for _, rel in listing], client=client)
    assert events.equals(ref) and len(events) > 1000
    assert problems.to_json() == ref_problems.to_json()


def test_framework_summaries_are_reduced_on_the_workers(cluster, tmp_path):
    """What ``analyze`` asks of the workers: each trace file reduced there (engine.framework_events),
    only its key rows, group sums and correlation columns come back; merged, they equal the
    summaries of the single-machine read."""
    from dask.distributed import Client

    from reportgen.engine.framework_events import FileSummary, FrameworkEvents
    from reportgen.readers.distributed import framework_listing
    from reportgen.readers.framework import read_framework
    from tests.support.engine_builders import summaries_on

    prof = make_profile(tmp_path / "p", nodes=2, cores=4, gpus=1, duration_s=300)
    seen: list = []
    with Client(cluster.scheduler_address) as client:
        listing = framework_listing(prof, None)
        fw = summaries_on(client, prof, ProblemLog(), [rel for _, rel in listing], seen)
        worker_pids = set(client.run(os.getpid).values())
    try:
        assert len(seen) == len(listing) == 3 and all(isinstance(fs, FileSummary) for fs in seen)
        assert {fs.stats.worker_pid for fs in seen} <= worker_pids and os.getpid() not in worker_pids
        ref = FrameworkEvents.from_table(read_framework(prof, ProblemLog()))
        assert fw.n_events == ref.n_events > 1000
        assert sum(fs.rows.n_events for fs in seen) == len(fw.rows) < fw.n_events
        assert fw.groups.to_dict("list") == ref.groups[list(fw.groups.columns)].to_dict("list")
        assert (fw.extent, fw.plausible_extent) == (ref.extent, ref.plausible_extent)
    finally:
        fw.close()


def test_incremental_second_run_reads_no_system_file(bench_profile, single, tmp_path):
    cache = tmp_path / "cache"
    first = analyze(bench_profile, tmp_path / "1", cache_root=cache)
    assert first.system_files_read == 80
    second = analyze(bench_profile, tmp_path / "2", cache_root=cache)
    assert second.system_files == 80
    assert second.system_files_read == 0
    assert outputs(tmp_path / "1") == outputs(single)
    assert outputs(tmp_path / "2") == outputs(single)


def test_incremental_live_job_reads_only_new_and_grown_files(cluster, tmp_path):
    """A running job: one node's newest file grows and another node gets a new file. The next run
    reads exactly those two files (on the cluster) and matches a fresh single-machine read."""
    full = make_profile(tmp_path / "full", nodes=2, cores=4, gpus=1, duration_s=600)
    live = tmp_path / "live"
    shutil.copytree(full, live)
    files = [p for _, p in list_system_files(live)]
    newest = {n: [p for p in files if f".{n}." in p.name][-1] for n in ("algo-1", "algo-2")}
    full_bytes = newest["algo-1"].read_bytes()
    newest["algo-1"].write_bytes(full_bytes[: len(full_bytes) // 2])  # still being written
    newest["algo-2"].unlink()  # not written yet
    cache = tmp_path / "cache"
    first = analyze(live, tmp_path / "o1", cache_root=cache, scheduler=cluster.scheduler_address)
    assert first.system_files_read == first.system_files == 19
    assert analyze(live, tmp_path / "o2", cache_root=cache).system_files_read == 0

    newest["algo-1"].write_bytes(full_bytes)
    shutil.copy2(full / newest["algo-2"].relative_to(live), newest["algo-2"])
    third = analyze(live, tmp_path / "o3", cache_root=cache, scheduler=cluster.scheduler_address)
    assert third.system_files == 20
    assert third.system_files_read == 2
    analyze(live, tmp_path / "fresh")
    assert outputs(tmp_path / "o3") == outputs(tmp_path / "fresh")
    assert analyze(live, tmp_path / "o4", cache_root=cache).system_files_read == 0


def test_incremental_cache_survives_duplicates_and_damage(tmp_path):
    """Two runs that raced store the same files twice; a damaged piece is read again, never used."""
    prof = make_profile(tmp_path / "p", nodes=2, cores=4, gpus=1, duration_s=300)
    ref = tmp_path / "ref"
    analyze(prof, ref)
    cache_a, cache_b = tmp_path / "a", tmp_path / "b"
    analyze(prof, tmp_path / "x", cache_root=cache_a)
    analyze(prof, tmp_path / "y", cache_root=cache_b)
    (folder_a,) = (cache_a / "system-records").iterdir()
    (folder_b,) = (cache_b / "system-records").iterdir()
    for f in folder_b.iterdir():  # b's pieces join a's: every file now has two cached pieces
        shutil.copy2(f, folder_a / f.name)
    assert len(list(folder_a.glob("*.json"))) == 8
    again = analyze(prof, tmp_path / "z", cache_root=cache_a)
    assert again.system_files_read == 0
    assert outputs(tmp_path / "z") == outputs(ref)  # nothing counted twice
    assert len(list(folder_a.glob("*.json"))) == 4  # the duplicates were removed
    victim = sorted(folder_a.glob("*.npz"))[0]
    victim.write_bytes(b"not a zip")
    damaged = analyze(prof, tmp_path / "w", cache_root=cache_a)
    assert 0 < damaged.system_files_read < damaged.system_files
    assert outputs(tmp_path / "w") == outputs(ref)


def test_scheduler_spec_errors():
    assert parse_scheduler("local").workers is None
    assert parse_scheduler("local:3").workers == 3
    assert parse_scheduler("tcp://10.0.0.5:8786").address == "tcp://10.0.0.5:8786"
    for bad in ("local:0", "locals", "tcp://host", "http://h:1", ""):
        with pytest.raises(InputError, match="--scheduler"):
            parse_scheduler(bad)


def test_unreachable_scheduler_is_a_one_line_input_error():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(InputError, match=f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}"):
        with dask_client(parse_scheduler(f"tcp://127.0.0.1:{port}"), connect_timeout=1):
            pass


def test_cli_without_dask_installed_exits_2(tmp_path, monkeypatch, capsys):
    import importlib.util as iu

    from reportgen.cli import main

    real = iu.find_spec
    monkeypatch.setattr(iu, "find_spec", lambda name, *a: None if name in ("dask", "distributed") else real(name, *a))
    prof = make_profile(tmp_path / "p", nodes=1, cores=2, gpus=1, duration_s=120)
    rc = main(["generate", str(prof), "-o", str(tmp_path / "r.html"), "--scheduler", "local:2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert err == ["reportgen: error: --scheduler needs Dask, which is not installed: pip install 'reportgen[dask]'"]
    assert not (tmp_path / "r.html").exists()


@pytest.mark.slow
def test_generate_without_scheduler_never_imports_dask_and_incremental_rereads_nothing(tmp_path):
    """Through the command line in a fresh interpreter: a plain `generate`, then two `generate
    --incremental` runs (the second on the unchanged folder parses 0 system files, as its progress
    line and GenerateResult say); Dask is never imported by any of them."""
    prof = make_profile(tmp_path / "p", nodes=1, cores=2, gpus=1, duration_s=180)
    cache = tmp_path / "cache"
    code = (
        "import sys\n"
        "from reportgen.cli import main\n"
        f"args = ['generate', {str(prof)!r}, '--cache-dir', {str(cache)!r}]\n"
        f"rcs = [main(args + ['-o', {str(tmp_path)!r} + f'/r{{i}}.html'] + extra)\n"
        "       for i, extra in enumerate([[], ['--incremental'], ['--incremental']])]\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed'))\n"
        "print(rcs, loaded)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[0, 0, 0] []"
    counts = [line for line in proc.stderr.splitlines() if "system metrics:" in line]
    assert counts == [f"reportgen: system metrics: 3 of 3 files read, the rest from the cache in {cache}",
                      f"reportgen: system metrics: 0 of 3 files read, the rest from the cache in {cache}"]
    for i in range(3):
        assert (tmp_path / f"r{i}.html").stat().st_size > 100_000
    assert json.loads((tmp_path / "r2.json").read_text())["sections"] == \
        json.loads((tmp_path / "r0.json").read_text())["sections"]


def test_raw_data_and_pytorch_traces_share_one_local_cluster(tmp_path, monkeypatch):
    """A folder with SageMaker raw data and PyTorch profiler traces, `--scheduler local:2`: the engine and the
    traces run on one cluster, started once (it was started once per reader, ~2 s each), and every output
    is byte-identical to the single-process path."""
    import dask.distributed

    from reportgen.pipeline import EngineOptions, SourceOptions, prepare_rule_outputs
    from tests.support.trace_sets import synthetic_sets

    prof = make_profile(tmp_path / "p", nodes=2, cores=2, gpus=1, duration_s=180)
    traces = synthetic_sets(tmp_path / "sets")["ddp4"]
    (prof / "traces").mkdir()
    for f in traces:
        shutil.copyfile(f, prof / "traces" / f.name)
    started = []
    real = dask.distributed.LocalCluster

    def counting(*args, **kwargs):
        started.append(kwargs.get("n_workers"))
        return real(*args, **kwargs)

    monkeypatch.setattr(dask.distributed, "LocalCluster", counting)
    here = prepare_rule_outputs(str(prof), tmp_path / "here")
    dask_run = prepare_rule_outputs(str(prof), tmp_path / "dask",
                                    SourceOptions(engine=EngineOptions(scheduler="local:2")))
    assert started == [2]
    assert here.used == dask_run.used == "raw data and PyTorch profiler traces"

    def files(prepared):
        analysis = prepared.rule_dir.parent
        return {p.relative_to(analysis).as_posix(): p.read_bytes() for p in sorted(analysis.rglob("*.json"))}

    got, want = files(dask_run), files(here)
    assert "kineto.json" in got and len(json.loads(got["kineto.json"])["ranks"]) == 4
    assert len([name for name in got if name.startswith("profiler-reports/")]) == len(RULE_ORDER)
    assert got == want
