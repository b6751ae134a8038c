#!/usr/bin/env python
"""Show that a refactoring left the outputs unchanged: rule outputs, report.json and the HTML's tables.

    python benchmarks/check_outputs_unchanged.py --base main [--profiles small,medium] [--real 10]
                                                 [--keep DIR] [--whole-page] [--warm] [--only WORDS]

The script exports the ``--base`` commit into a temporary folder (``git archive``), then runs the same
inputs through that code and through the working tree, each in its own process (``PYTHONPATH`` picks
the tree; the notebook kernel inherits it), and compares byte for byte:

* the rule outputs the engine writes (``profiler-reports/*.json``, ``data-quality.json``,
  ``timeline.json``) for every raw profile, and those ``generate --rule-outputs`` keeps for every input;
* ``report.json`` of ``reportgen generate`` with ``generator.generated_at`` blanked;
* every ``<table>…</table>`` of the HTML report, in order; with ``--whole-page``, the whole page instead,
  its "Generated <time> UTC" stamp blanked (for changes to the rendering path that must not move a byte);
* what is made from those report.json files (``ci/``): ``reportgen check``'s JUnit and Markdown of each with
  every cause and rule in ``--fail-on`` (its exit code too), ``check --base`` against the input before it,
  ``reportgen trend`` over all of them (Markdown and trend.json); and the comparison of each input's kept
  rule outputs with the one before's (compare.json, its Markdown, every chart, table and text of its sections, built
  in process as ``compare`` builds them, the prices file's path blanked).

Both trees run with the trace cache off (``REPORTGEN_NO_CACHE=1``): a reduction kept by an earlier run would
stand in for the reader under test. ``--warm`` then runs the tree twice more with a fresh trace cache of its
own, filling it and then reading every trace and every page from it (the page cache lives in the same folder),
and compares both with the base too (issue 51: a warm run writes the cold run's outputs).

Inputs: ``sample_data``, the synthetic benchmark profiles named by ``--profiles`` (written once with
``benchmarks/generate_data.py``, deterministic), every raw fixture in ``../shared/fixtures/raw`` and
the first ``--real`` jobs of ``../shared/fixtures/real`` (rule outputs only), and the recordings of
``tests/recordings`` that hold XSpace files (``recording-jax-tf-jax-cpu``, ``recording-planted-tf-eager``, ...).  Run it against the commit
your branch was rebased onto: other changes on ``main`` alter outputs on purpose.  Exit 0 when every
output is identical, 1 otherwise (the differing files are listed).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT.parent / "shared" / "fixtures"
TABLE = re.compile(r"<table\b.*?</table>", re.S)
STAMP = re.compile(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d UTC")


def export_tree(ref: str, dest: Path) -> None:
    """The files of commit ``ref`` under ``dest`` (no worktree bookkeeping left behind)."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref], check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")


def inputs(work: Path, profiles: list[str], n_real: int) -> list[tuple[str, Path]]:
    found = [("sample_data", ROOT / "sample_data")]
    for size in profiles:
        out = work / "profiles" / size
        if not out.exists():
            subprocess.run([sys.executable, str(ROOT / "benchmarks" / "generate_data.py"), "--size", size,
                            "--out", str(out)], check=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                           stdout=subprocess.DEVNULL)
        found.append((f"profile-{size}", out))
    raw = FIXTURES / "raw"
    if raw.is_dir():
        found += [(f"raw-{p.name}", p) for p in sorted(raw.iterdir()) if p.is_dir() and not p.name.startswith("_")]
    recordings = ROOT / "tests" / "recordings"  # the JAX / TensorFlow recordings: the only XSpace files at hand
    found += [(f"recording-{run.parent.name}-{run.name}", run) for run in sorted(recordings.glob("*/*"))
              if run.is_dir() and any(run.rglob("*.xplane.pb*"))]
    real = FIXTURES / "real"
    if real.is_dir():
        found += [(f"real-{p.name}", p / "profiler-reports") for p in sorted(real.iterdir())
                  if (p / "profiler-reports").is_dir()][:n_real]
    return found


def dump(out: Path, named: list[tuple[str, Path]], whole_page: bool = False) -> None:
    """Run in a child whose ``PYTHONPATH`` is the tree under test: write every output under ``out``."""
    import reportgen
    from reportgen.engine import analyze

    print(f"  code: {Path(reportgen.__file__).parent}", flush=True)
    for name, src in named:
        dest = out / name
        dest.mkdir(parents=True, exist_ok=True)
        if (src / "system").is_dir() or (src / "framework").is_dir():  # a raw profile
            work = Path(tempfile.mkdtemp(prefix="rg-eq-"))
            try:
                analyze(src, work)
                for path in sorted(work.rglob("*.json")):
                    target = dest / "rules" / path.relative_to(work)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, target)
            except Exception as exc:  # the same failure on both sides is "unchanged"
                (dest / "analyze-error.txt").write_text(f"{type(exc).__name__}: {exc}\n")
            finally:
                shutil.rmtree(work, ignore_errors=True)
        html, js = dest / "report.html", dest / "report.json"
        run = subprocess.run([sys.executable, "-m", "reportgen", "generate", str(src), "-o", str(html),
                              "--json", str(js), "--rule-outputs", str(dest / "rule-outputs"), "-q"],
                             capture_output=True, text=True)
        (dest / "generate-exit.txt").write_text(f"{run.returncode}\n{run.stderr.replace(str(src), 'SRC')}")
        if js.exists():
            data = json.loads(js.read_text())
            data.get("generator", {}).pop("generated_at", None)
            js.write_text(json.dumps(data, indent=1, sort_keys=True))
        if html.exists():
            text = html.read_text()
            if whole_page:
                (dest / "page.html").write_text(STAMP.sub("Generated (time) UTC", text))
            else:
                (dest / "tables.html").write_text("\n".join(TABLE.findall(text)))
            html.unlink()
        print(f"  {name}", flush=True)
    dump_ci(out, named)


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reportgen", *argv], capture_output=True, text=True)


def dump_ci(out: Path, named: list[tuple[str, Path]]) -> None:
    """The CI, trend and comparison outputs of the inputs ``dump`` wrote report.json for, under ``out/ci``."""
    import reportgen
    from reportgen.ci_outputs import known_causes
    from reportgen.compare.build import build_comparison
    from reportgen.compare.output import compare_data, to_markdown
    from reportgen.compare.side import load_side
    from reportgen.report.model import Chart, ChartRow, Table, Text
    from reportgen.rulebook import CHECKED_RULES

    ci = out / "ci"
    ci.mkdir(parents=True, exist_ok=True)
    reports = [(name, out / name / "report.json") for name, _ in named if (out / name / "report.json").exists()]
    fail_on = ",".join([*known_causes(), *CHECKED_RULES])
    for i, (name, js) in enumerate(reports):
        junit, markdown = ci / f"{name}.junit.xml", ci / f"{name}.md"
        run = _cli("check", str(js), "--junit", str(junit), "--markdown", str(markdown), "--no-step-summary",
                   "--fail-on", fail_on, "-q")
        (ci / f"{name}.check-exit.txt").write_text(f"{run.returncode}\n{run.stdout}{run.stderr}".replace(str(out), "OUT"))
        if i:
            run = _cli("check", str(js), "--base", str(reports[i - 1][1]), "--no-step-summary", "-q")
            (ci / f"{name}.check-base.md").write_text(f"{run.returncode}\n{run.stdout}{run.stderr}".replace(str(out), "OUT"))
    if len(reports) > 1:
        run = _cli("trend", *[str(js) for _, js in reports], "--format", "md", "-o", str(ci / "trend.md"),
                   "--json", str(ci / "trend.json"), "-q")
        (ci / "trend-exit.txt").write_text(f"{run.returncode}\n{run.stderr}")
        for path in (ci / "trend.md", ci / "trend.json"):
            if path.exists():
                path.write_text(path.read_text().replace(str(out), "OUT"))
    tree = str(Path(reportgen.__file__).resolve().parents[1])  # the prices file's path names the tree
    sides = [(name, out / name / "rule-outputs") for name, _ in named if (out / name / "rule-outputs").is_dir()]
    for (name_a, dir_a), (name_b, dir_b) in zip(sides, sides[1:]):
        target = ci / f"compare-{name_a}-vs-{name_b}"
        try:
            a = load_side("A", dir_a, name=name_a, source=name_a, instance_type="ml.p3.2xlarge", instance_count=1)
            b = load_side("B", dir_b, name=name_b, source=name_b, instance_type="ml.g4dn.xlarge", instance_count=2)
            report = build_comparison(a, b)
            blocks = [{"id": c.id, "figure": c.figure, "fallback": c.fallback, "numbers": repr(c.numbers)}
                      if isinstance(c, Chart) else {"table": c.id, "rows": repr(c.rows)} if isinstance(c, Table)
                      else {"text": c.text, "tone": c.tone} if isinstance(c, Text) else {"block": repr(c)}
                      for section in report.sections for block in section.blocks
                      for c in (block.charts if isinstance(block, ChartRow) else [block])]
            text = "\n".join([json.dumps(compare_data(report, a.meta(), b.meta(), "(time)"), indent=1, default=repr),
                              to_markdown(report, a.meta(), b.meta(), "(time)"),
                              json.dumps(blocks, indent=0, default=repr)])
        except Exception as exc:  # the same failure on both sides is "unchanged"
            text = f"{type(exc).__name__}: {exc}"
        target.with_suffix(".txt").write_text(text.replace(tree, "TREE"))
    print(f"  ci: {len(reports)} report.json, {max(len(sides) - 1, 0)} comparisons", flush=True)


def run_tree(tree: Path, out: Path, named: list[tuple[str, Path]], whole_page: bool = False,
             cache: Path | None = None) -> float:
    """``dump`` in a child on ``tree``; the trace cache off, or in ``cache`` when given."""
    spec = json.dumps([[n, str(p)] for n, p in named])
    env = {**os.environ, "PYTHONPATH": str(tree), "REPORTGEN_NO_CACHE": "1"}
    if cache is not None:
        env.pop("REPORTGEN_NO_CACHE")
        env["REPORTGEN_CACHE_DIR"] = str(cache)
    start = time.perf_counter()
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--dump", str(out), "--inputs", spec,
                    *(["--whole-page"] if whole_page else [])],
                   check=True, env=env, cwd=tree)
    return time.perf_counter() - start


def compare(a: Path, b: Path) -> list[str]:
    files_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    differ = [f"only in base: {p}" for p in sorted(files_a - files_b)]
    differ += [f"only in tree: {p}" for p in sorted(files_b - files_a)]
    differ += [f"differs: {p}" for p in sorted(files_a & files_b) if (a / p).read_bytes() != (b / p).read_bytes()]
    return differ


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="main", help="commit to compare against (default: main)")
    ap.add_argument("--head", default=None,
                    help="commit to check instead of the working tree (lets you keep editing while it runs)")
    ap.add_argument("--profiles", default="small", help="benchmark profiles, comma-separated (small,medium)")
    ap.add_argument("--real", type=int, default=10, help="how many real rule-output jobs (default 10)")
    ap.add_argument("--keep", type=Path, default=None, help="keep the outputs (and generated profiles) here")
    ap.add_argument("--whole-page", action="store_true",
                    help="compare the whole HTML page (generation time blanked), not only its tables")
    ap.add_argument("--only", default=None,
                    help="only the inputs whose name holds one of these words, comma-separated (e.g. kineto,hta)")
    ap.add_argument("--warm", action="store_true",
                    help="also run the tree twice with a fresh trace cache (filled, then warm) and compare both")
    ap.add_argument("--dump", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--inputs", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dump:
        dump(args.dump, [(n, Path(p)) for n, p in json.loads(args.inputs)], args.whole_page)
        return 0
    work = args.keep or Path(tempfile.mkdtemp(prefix="rg-unchanged-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        base_tree = work / "base-tree"
        shutil.rmtree(base_tree, ignore_errors=True)
        export_tree(args.base, base_tree)
        shutil.rmtree(work / "base", ignore_errors=True)
        shutil.rmtree(work / "tree", ignore_errors=True)
        head_tree = ROOT
        if args.head:
            head_tree = work / "head-tree"
            shutil.rmtree(head_tree, ignore_errors=True)
            export_tree(args.head, head_tree)
        named = inputs(work, [p for p in args.profiles.split(",") if p], args.real)
        if args.only:
            named = [(n, p) for n, p in named if any(word in n for word in args.only.split(","))]
        print(f"{len(named)} inputs; base {args.base}, checked {args.head or 'working tree'}")
        t_base = run_tree(base_tree, work / "base", named, args.whole_page)
        t_tree = run_tree(head_tree, work / "tree", named, args.whole_page)
        runs = [("tree", t_tree)]
        if args.warm:
            cache = work / "trace-cache"
            shutil.rmtree(cache, ignore_errors=True)
            for name in ("tree-filled", "tree-warm"):
                shutil.rmtree(work / name, ignore_errors=True)
                runs.append((name, run_tree(head_tree, work / name, named, args.whole_page, cache)))
        failed = False
        for name, seconds in runs:
            differ = compare(work / "base", work / name)
            n_files = sum(1 for p in (work / name).rglob("*") if p.is_file())
            print(f"{name}: {n_files} output files compared over {len(named)} inputs "
                  f"(base {t_base:.0f} s, {name} {seconds:.0f} s): " + ("all identical" if not differ else
                                                                       f"{len(differ)} differ"))
            for line in differ:
                print("  " + line)
            failed = failed or bool(differ)
        return 1 if failed else 0
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
