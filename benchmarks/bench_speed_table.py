#!/usr/bin/env python
"""Issue 51's speed table in one command: every trace set's MB/CPU s against the floor, reportgen's reader,
cold and warm ``generate`` and ``compare``, HTA, the analyses-added ratio and ``local:2`` on 24 ranks, measured
in one run and printed as the Markdown table benchmarks/README.md shows (``--json FILE``: every raw number).

    python benchmarks/bench_speed_table.py [--sets real,synthetic,xspace,dask] [--big DIR [--big-repeat 1]] [--repeat 3]
        [--hta-python /tmp/hta/bin/python] [--protobuf-python /work/recenv/bin/python]
        [--before-analyses DIR] [--synthetic-dir DIR] [--skip generate,compare,hta] [--quick] [--json FILE]

The sets (each a row; one not measured is a row that says why, never a gap):

* ``real``: the shared real Kineto traces, the trace files of ``raw/hta-*``, ``raw/kineto-*`` and
  ``raw/torch-cpu-record-*`` of the fixtures (found as the tests find them: ``../shared/fixtures`` beside the
  checkout or ``$REPORTGEN_FIXTURES``), linked into one temporary folder; ``compare``: ``kineto-resnet50-num-workers-0``
  against ``-4``;
* ``synthetic``: ``generate_kineto.py --ranks 2 --mb 100`` under ``benchmarks/data/`` (made once; ``--synthetic-dir``:
  an existing set instead); ``compare``: against the same size made with ``--seed 2``;
* ``big`` (``--big DIR``, only when asked): the 64 ranks x 200 MB set (made there with ``--jobs 2`` when DIR holds
  no trace: 12.6 GB); HTA is not run on it (it needs ~21 GB), nor ``compare`` (a second 12.6 GB set);
* ``xspace``: the JAX / TensorFlow recordings under ``tests/recordings``: the reader against protobuf's
  ``XSpace.ParseFromString`` (``--protobuf-python``: a Python with TensorFlow);
* ``dask``: ``--scheduler local:2`` against one process on 24 one-file ranks (``bench_dask_ranks.py --distinct``).

Per Kineto set: the MB of text (gunzipped); the floor (read + gunzip + ``orjson.loads``) and the reader, CPU s of
this process (``bench_trace_read.py``'s functions); whole processes (``process_tree.run``: wall, CPU of the tree,
the tree's peak PSS) of ``generate`` cold (``REPORTGEN_NO_CACHE=1``), warm (a fresh ``REPORTGEN_CACHE_DIR`` filled
by one run first), ``compare`` cold and warm, HTA (``bench_kineto_scale.py``'s runner, ``--hta-python``), and
``analyze`` of ``--before-analyses`` (an export of the commit before the analyses issue 51 added) against this
tree's. Every figure is the median of ``--repeat`` interleaved rounds (each round runs every measurement once,
the order rotating). The 1-minute load average is stamped before and after each row; the commit, date, cores
and RAM head the output. ``--quick``: small sets, one round (a check that every row works, not a figure).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import bench_dask_ranks as dask_ranks  # noqa: E402
import bench_kineto_scale as kineto_scale  # noqa: E402
import bench_trace_read as trace_read  # noqa: E402
import process_tree  # noqa: E402
from speed_table import Row, dask_line, markdown, missing_row  # noqa: E402

from tests.support.paths import RAW, RECORDINGS  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
REAL_GLOBS = ("hta-*", "kineto-*", "torch-cpu-record-*")
REAL_QUICK_GLOBS = ("hta-*", "torch-cpu-record-*")
REAL_COMPARE = ("kineto-resnet50-num-workers-0", "kineto-resnet50-num-workers-4")
REAL_QUICK_COMPARE = ("torch-cpu-record-inputbound", "torch-cpu-record-workers2")
XSPACE_RECORDINGS = ("planted/jax-clean", "planted/tf-eager", "jax-tf/tf-cpu", "jax-tf/jax-cpu", "planted/jax-nojit")
SKIP_PREFIX = {"generate": "generate-", "compare": "compare-", "hta": "hta", "analyses": "analyze-"}
HTA_REAL_WHY = "HTA reads one job's ranks a folder: on these nine jobs its temporal breakdown came out empty (IndexError)"
HTA_BIG_WHY = "HTA on 12.6 GB needs ~21 GB of memory (HISTORY.md, PyTorch traces at scale)"


def trace_files(folder: Path) -> list[Path]:
    """A folder's profiler trace files (not a recording's system metrics or its recording.json)."""
    return [p for p in trace_read.trace_files(folder) if "system" not in p.relative_to(folder).parts
            and p.name != "recording.json"]


def real_set(into: Path, globs: tuple[str, ...]) -> tuple[Path | None, str]:
    """The shared real traces linked into one folder: (folder, what) or (None, why not)."""
    if not RAW.is_dir():
        return None, f"no fixtures at {RAW} (set REPORTGEN_FIXTURES)"
    folders = sorted(d for g in globs for d in RAW.glob(g) if d.is_dir())
    files = [f for d in folders for f in trace_files(d)]
    if not files:
        return None, f"no trace files under {RAW}/{{{','.join(globs)}}}"
    into.mkdir(parents=True)
    for f in files:
        link = into / f.name
        if link.exists():  # two fixtures with one file name: the folder's name keeps them apart
            link = into / f"{f.parent.name}-{f.name}"
        link.symlink_to(f)
    return into, f"{len(files)} files of raw/{{{','.join(globs)}}}"


def synthetic_set(folder: Path, mb: int, seed: int = 0, ranks: int = 2, jobs: int = 1) -> Path:
    """A ``generate_kineto.py`` set, made once (its files kept under benchmarks/data/)."""
    if not (folder.is_dir() and trace_files(folder)):
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "generate_kineto.py"), "--ranks", str(ranks),
                        "--mb", str(mb), "--seed", str(seed), "--jobs", str(jobs), "--out", str(folder)],
                       check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL)
    return folder


def whole_process(argv: list[str], env: dict, cwd: Path = ROOT) -> dict:
    """One whole process by ``process_tree.run``, its orphans reaped (this process is their subreaper)."""
    try:
        wall, peak, cpu = process_tree.run(argv, env=env, cwd=cwd, after_exit=lambda: dask_ranks.reap_orphans(set()))
    except SystemExit as failed:
        return {"error": str(failed)[-300:]}
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "peak_mb": round(peak, 1)}


def reportgen(command: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "reportgen", command, *args, "-q"]


@dataclass
class Job:
    name: str
    argv: Callable[[Path], list[str]]  # given a fresh output folder
    env: dict
    cwd: Path = ROOT
    parse_tail: bool = False
    fresh_cache: bool = False  # each run its own empty REPORTGEN_CACHE_DIR (cold runs: nothing found, nothing kept)


def measure_rounds(row: Row, jobs: list[Job], rounds: int, scratch: Path) -> None:
    """Every job once a round, the order rotating; each run a whole process into a fresh output folder."""
    for round_ in range(rounds):
        shift = round_ % max(len(jobs), 1)
        for job in jobs[shift:] + jobs[:shift]:
            out = Path(tempfile.mkdtemp(prefix=f"{job.name}-", dir=scratch))
            env = {**job.env, "REPORTGEN_CACHE_DIR": str(out / "cache")} if job.fresh_cache else job.env
            if job.parse_tail:  # HTA: bench_kineto_scale's runner (VmHWM, CPU of the tree, its JSON line)
                got = kineto_scale.measure(job.argv(out), env, cwd=job.cwd)
                result = {"wall_s": got["wall_s"], "cpu_s": got["cpu_s"], "peak_mb": got["tree_peak_mb"]}
                if got["rc"]:
                    result = {"error": got["tail"].strip().splitlines()[-1][-300:] if got["tail"].strip() else "?"}
            else:
                result = whole_process(job.argv(out), env, job.cwd)
            shutil.rmtree(out, ignore_errors=True)
            if "error" in result:
                row.why_not[job.name] = f"failed: {result['error']}"
            row.runs.setdefault(job.name, []).append({"round": round_, **result})
            print(json.dumps({"set": row.name, "what": job.name, **result}), flush=True)


def floor_and_reader(row: Row, files: list[Path], rounds: int) -> None:
    """bench_trace_read's floor and reader, in this process, interleaved."""
    for round_ in range(rounds):
        for what, fn in (("floor", trace_read.floor), ("reader", trace_read.read_trace))[:: 1 if round_ % 2 == 0 else -1]:
            cpu = trace_read.cpu_of(fn, files)
            row.runs.setdefault(what, []).append({"round": round_, "cpu_s": round(cpu, 3)})
            print(json.dumps({"set": row.name, "what": what, "cpu_s": round(cpu, 3)}), flush=True)


def kineto_row(name: str, folder: Path, compare: tuple[Path, Path] | None, args, scratch: Path,
               hta_why: str = "", compare_why: str = "", rounds: int | None = None) -> Row:
    files = trace_files(folder)
    row = Row(name=name, files=len(files))
    load0 = os.getloadavg()[0]
    row.mb = round(sum(len(trace_read.text_of(f)) for f in files) / 1e6, 1)
    if "floor" in args.skip:
        row.why_not["floor"] = "skipped (--skip)"
    else:
        floor_and_reader(row, files, rounds or args.repeat)
    base_env = {**os.environ, "PYTHONPATH": str(ROOT)}
    base_env.pop("REPORTGEN_NO_CACHE", None)
    cold_env = {**base_env, "REPORTGEN_NO_CACHE": "1"}
    warm_env = {**base_env, "REPORTGEN_CACHE_DIR": str(Path(tempfile.mkdtemp(prefix="cache-", dir=scratch)))}
    jobs = [Job("generate-cold", lambda out: reportgen("generate", str(folder), "-o", str(out / "r.html")), cold_env,
                fresh_cache=True),
            Job("generate-warm", lambda out: reportgen("generate", str(folder), "-o", str(out / "r.html")), warm_env)]
    if compare is not None:
        a, b = compare
        jobs += [Job("compare-cold", lambda out: reportgen("compare", str(a), str(b), "-o", str(out / "c.html")), cold_env,
                     fresh_cache=True),
                 Job("compare-warm", lambda out: reportgen("compare", str(a), str(b), "-o", str(out / "c.html")), warm_env)]
    else:
        row.why_not["compare-cold"] = row.why_not["compare-warm"] = compare_why
    if hta_why:
        row.why_not["hta"] = hta_why
    elif args.hta_python is None:
        row.why_not["hta"] = "no --hta-python"
    else:
        jobs.append(Job("hta", lambda out: [str(args.hta_python), "-c", kineto_scale.HTA_SCRIPT, str(folder)],
                        {**os.environ, "HTA_DISABLE_NS_ROUNDING": "1"}, parse_tail=True))
    if args.before_analyses is None:
        row.why_not["analyze-before"] = "no --before-analyses"
    else:
        before = args.before_analyses.resolve()
        jobs += [Job("analyze-before", lambda out: reportgen("analyze", str(folder), "-o", str(out / "rules")),
                     {**cold_env, "PYTHONPATH": str(before)}, cwd=before, fresh_cache=True),
                 Job("analyze-now", lambda out: reportgen("analyze", str(folder), "-o", str(out / "rules")), cold_env,
                     fresh_cache=True)]
    for what in args.skip - {"floor"}:  # generate, compare, hta, analyses
        for job in [j for j in jobs if j.name.startswith(SKIP_PREFIX[what])]:
            jobs.remove(job)
            row.why_not[job.name] = "skipped (--skip)"
    # the warm runs' caches filled once, not measured
    for job in jobs:
        if job.name.endswith("-warm"):
            fill = Path(tempfile.mkdtemp(prefix="fill-", dir=scratch))
            whole_process(job.argv(fill), job.env)
    measure_rounds(row, jobs, rounds or args.repeat, scratch)
    if rounds:
        row.notes.append(f"{row.name}: {rounds} round(s) (--big-repeat), not {args.repeat}")
    row.load = (load0, os.getloadavg()[0])
    return row


def xspace_row(files: list[Path], args) -> Row:
    """The XSpace reader against protobuf's ``ParseFromString`` (bench_trace_read's child script)."""
    row = Row(name=f"XSpace recordings ({len(files)} files)", files=len(files))
    if not files:
        return missing_row(row.name, f"no .xplane.pb.gz under {RECORDINGS}")
    load0 = os.getloadavg()[0]
    row.mb = round(sum(len(trace_read.text_of(f)) for f in files) / 1e6, 1)
    for round_ in range(args.repeat):
        cpu = sum(trace_read.cpu_of(trace_read.read_xspace, [f]) for f in files)
        row.runs.setdefault("reader", []).append({"round": round_, "cpu_s": round(cpu, 3)})
        if args.protobuf_python:
            total = 0.0
            for f in files:
                out = subprocess.run([str(args.protobuf_python), "-c", trace_read.PROTOBUF_FLOOR, str(f), "1"],
                                     capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
                total += json.loads(out)["cpu_s"]
            row.runs.setdefault("floor", []).append({"round": round_, "cpu_s": round(total, 3)})
    if not args.protobuf_python:
        row.why_not["floor"] = "no --protobuf-python"
    row.notes.append("XSpace: the floor is protobuf's ParseFromString (goal: the reader ≤ 3x it)")
    row.load = (load0, os.getloadavg()[0])
    return row


def dask_runs(copies: int, rounds: int, scratch: Path) -> dict[str, list[dict]]:
    """bench_dask_ranks's one process and ``local:2``, interleaved, every run reading its traces (no cache, as
    that script's main sets it); outputs compared with one process's."""
    folder = dask_ranks.build_set(copies, distinct=True)
    runs: dict[str, list[dict]] = {}
    first: dict[str, bytes] = {}
    saved = os.environ.get("REPORTGEN_NO_CACHE")
    os.environ["REPORTGEN_NO_CACHE"] = "1"  # run_once passes this process's environment on
    try:
        for round_ in range(rounds):
            for mode in (["single", "local:2"] if round_ % 2 == 0 else ["local:2", "single"]):
                out = Path(tempfile.mkdtemp(prefix="ranks-", dir=scratch))
                got = dask_ranks.run_once(folder, mode, out, None, None)
                outputs = {n: (out / n).read_bytes() for n in dask_ranks.OUTPUTS if (out / n).is_file()}
                if mode == "single" and not first:
                    first = outputs
                got["outputs"] = outputs
                runs.setdefault(mode, []).append(got)
                shutil.rmtree(out, ignore_errors=True)
    finally:
        if saved is None:
            os.environ.pop("REPORTGEN_NO_CACHE", None)
        else:
            os.environ["REPORTGEN_NO_CACHE"] = saved
    for got in runs.get("local:2", []):
        got["outputs_equal"] = got.pop("outputs") == first and len(first) == len(dask_ranks.OUTPUTS)
    for got in runs.get("single", []):
        got.pop("outputs", None)
    print(json.dumps({"set": folder.name, "runs": runs}), flush=True)
    return runs


def machine() -> dict:
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return {"commit": commit + (" (with uncommitted changes)" if dirty else ""),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "cores": os.cpu_count(), "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
            "python": sys.version.split()[0]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="real,synthetic,xspace,dask", help="comma-separated: real, synthetic, xspace, dask")
    ap.add_argument("--big", type=Path, default=None, help="the 64 ranks x 200 MB set's folder (made there if empty)")
    ap.add_argument("--synthetic-dir", type=Path, default=None, help="an existing 2 x 100 MB set instead of making one")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds; each figure is their median")
    ap.add_argument("--hta-python", type=Path, default=None, help="a Python with HolisticTraceAnalysis")
    ap.add_argument("--protobuf-python", type=Path, default=None, help="a Python with TensorFlow (XSpace floor)")
    ap.add_argument("--before-analyses", type=Path, default=None,
                    help="an export of the commit before issue 51's analyses (5c98fd1): analyze's CPU against it")
    ap.add_argument("--big-repeat", type=int, default=1, help="rounds on the --big set (one is ~15 min of two cores)")
    ap.add_argument("--dask-copies", type=int, default=24)
    ap.add_argument("--skip", default="", help="comma-separated measurements left out: floor (with the reader), "
                    "generate, compare, hta, analyses")
    ap.add_argument("--quick", action="store_true", help="small sets, one round: checks that every row works")
    ap.add_argument("--json", type=Path, default=None, help="write every raw number here")
    args = ap.parse_args(argv)
    if args.quick:
        args.repeat = 1
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    if args.skip - {"floor", *SKIP_PREFIX}:
        ap.error(f"--skip: unknown {sorted(args.skip - {'floor', *SKIP_PREFIX})}")
    sets = {s.strip() for s in args.sets.split(",") if s.strip()}
    if sets - {"real", "synthetic", "xspace", "dask"}:
        ap.error(f"--sets: unknown {sorted(sets - {'real', 'synthetic', 'xspace', 'dask'})} (--big DIR adds the 64-rank set)")
    about = machine()
    print(f"# {about}", flush=True)
    dask_ranks.become_subreaper()  # orphans' CPU reaches RUSAGE_CHILDREN once reaped
    for tree in [ROOT] + ([args.before_analyses] if args.before_analyses else []):  # as pip leaves a package
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(tree) / "reportgen")], check=True)
    scratch = Path(tempfile.mkdtemp(prefix="speed-table-"))
    rows: list[Row] = []
    dask: tuple[dict, str | None] = ({}, "not asked (--sets)")
    try:
        if "real" in sets:
            folder, what = real_set(scratch / "real", REAL_QUICK_GLOBS if args.quick else REAL_GLOBS)
            pair = tuple(RAW / n for n in (REAL_QUICK_COMPARE if args.quick else REAL_COMPARE))
            if folder is None:
                rows.append(missing_row("real Kineto traces", what))
            else:
                row = kineto_row("real Kineto traces", folder, pair if all(p.is_dir() for p in pair) else None, args,
                                 scratch, hta_why=HTA_REAL_WHY, compare_why="the compare fixtures are missing")
                row.name = f"real Kineto traces ({what})"
                row.notes.append(f"compare: raw/{pair[0].name} vs raw/{pair[1].name}")
                rows.append(row)
        else:
            rows.append(missing_row("real Kineto traces", "not asked (--sets)"))
        if "synthetic" in sets:
            mb = 10 if args.quick else 100
            folder = args.synthetic_dir or synthetic_set(DATA / f"kineto-2x{mb}mb", mb)
            other = synthetic_set(DATA / f"kineto-2x{mb}mb-seed2", mb, seed=2)
            rows.append(kineto_row(f"synthetic 2 x {mb} MB", folder, (folder, other), args, scratch))
        else:
            rows.append(missing_row("synthetic 2 x 100 MB", "not asked (--sets)"))
        if args.big is not None:
            big = synthetic_set(args.big, 200, ranks=64, jobs=2)
            files = sum(1 for f in big.rglob("*.json*") if f.is_file())
            rows.append(kineto_row(f"{big.name} (--big, {files} files)", big, None, args, scratch, hta_why=HTA_BIG_WHY,
                                   compare_why="a second set of the same size would be another 12.6 GB",
                                   rounds=args.big_repeat))
        else:
            rows.append(missing_row("64 ranks x 200 MB", "not asked (--big DIR; 12.6 GB, ~10 min of two cores)"))
        if "xspace" in sets:
            files = [f for r in XSPACE_RECORDINGS[: 2 if args.quick else None]
                     for f in sorted((RECORDINGS / r).rglob("*.xplane.pb.gz"))]
            rows.append(xspace_row(files, args))
        else:
            rows.append(missing_row("XSpace recordings", "not asked (--sets)"))
        if "dask" in sets:
            if not dask_ranks.FIXTURE.is_dir():
                dask = ({}, f"no {dask_ranks.FIXTURE}")
            else:
                dask = (dask_runs(args.dask_copies, args.repeat, scratch), None)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    table = markdown(rows)
    notes = [n for r in rows for n in r.notes]
    print(f"\nMeasured {about['date']} on {about['commit']}: {about['cores']} cores, {about['ram_gb']} GB RAM, "
          f"median of {args.repeat} interleaved round(s){' (--quick)' if args.quick else ''}; CPU s of the whole "
          f"process tree, peak = the tree's PSS.\n")
    print(table)
    print("\n" + dask_line(dask[0], args.dask_copies, dask[1]))
    for note in notes:
        print(f"\n{note}")
    if args.json:
        args.json.write_text(json.dumps({"machine": about, "repeat": args.repeat, "quick": args.quick,
                                         "rows": [r.__dict__ for r in rows], "dask": dask[0], "markdown": table},
                                        indent=1, default=str))
    ok = all(not w.startswith("failed") for r in rows for w in r.why_not.values())
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
