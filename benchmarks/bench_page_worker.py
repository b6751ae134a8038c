"""CPU of the page's worker process (issue 51): where `generate`'s page goes, phase by phase.

Usage: python benchmarks/bench_page_worker.py [SOURCE ...] [--runs 7] [--imports]

For each SOURCE (default: sample_data/), `reportgen analyze` writes its rule outputs once; then, `--runs`
times each, in fresh processes:
- the whole worker (`python -m reportgen.render.worker` given one request, as `generate` sends it): user +
  system CPU of the finished child, what a run pays for its page;
- the same steps timed one by one inside one process (CPU s, `time.process_time`), in the warm-up's order
  (`render.html.warm_up`): numpy, papermill, the IPython shell, nbformat's read, the report builders, the block
  templates, nbconvert, the exporter's template; then the notebook executed and converted;
- a bare interpreter (`python -c pass`): the start every process pays.
`--imports`: the third-party packages under papermill and nbconvert, each imported after the ones before it
(so each figure is what that package adds). Medians, with min and max; CPU figures move less than wall
with the machine's load (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMPORTS = ("traitlets", "jsonschema", "nbformat", "jupyter_client", "nbclient", "requests", "yaml", "click",
           "tenacity", "papermill", "IPython", "jinja2", "mistune", "bs4", "bleach", "nbconvert")

# One process, the warm-up's steps one by one (each line: a phase name, then its code), then the page.
PHASES = r'''
import json, os, sys, time
marks = [("start", time.process_time())]
def mark(name): marks.append((name, time.process_time()))
rules, out = sys.argv[1], sys.argv[2]
from reportgen.blas_threads import import_numpy_with_one_blas_thread
import_numpy_with_one_blas_thread(); mark("numpy (one BLAS thread)")
from reportgen.render import html, inprocess
from reportgen.render.lazy_imports import lazy, left_out
lazy_packages = lazy(); lazy_packages.__enter__()  # as the worker's warm-up: what a page never runs stays lazy
optional = left_out(); optional.__enter__()  # and nbconvert's serve post-processor is left out
from reportgen.render.stand_ins import no_plugins, stand_ins
stood_in = stand_ins(); stood_in.__enter__()  # what is bound from modules a page never uses: stand-ins
plugins = no_plugins(); plugins.__enter__()  # and papermill's plugins are not looked for
mark("reportgen.render.html")
if "boto3" not in sys.modules:  # as render.html imports it: without its S3 handler
    sys.modules["papermill.s3"] = None
import papermill
sys.modules.pop("papermill.s3", None); mark("papermill")
inprocess.register(); inprocess.warm_up(); mark("IPython shell")
import IPython.display, nbformat
nbformat.read(str(html.notebook_path()), as_version=4); mark("nbformat + the notebook's validation")
import reportgen.report.build, reportgen.rule_outputs
mark("report builders (reportgen.report, diagnosis)")
from reportgen.render.blocks import compile_templates
compile_templates(); mark("block templates compiled (Jinja)")
import nbconvert
mark("nbconvert")
html.warm_up(); mark("the exporter and its template")
plugins.__exit__(None, None, None)
stood_in.__exit__(None, None, None)
optional.__exit__(None, None, None)
lazy_packages.__exit__(None, None, None)
parameters = {"source": rules, "output_dir": out, "job_name": "bench", "standalone": True, "notes": [],
              "description": "bench", "incomplete": False, "source_label": rules, "cost": {}}
nb = html.execute_notebook(parameters); mark("notebook executed (papermill, the cells)")
page = html.notebook_to_html(nb); mark("converted (nbconvert)")
phases = {name: marks[i][1] - marks[i - 1][1] for i, (name, _) in enumerate(marks) if i}
phases["all steps"] = marks[-1][1] - marks[0][1]
print(json.dumps(phases)); sys.stdout.flush(); os._exit(0)
'''

IMPORT_STEPS = r'''
import importlib, json, os, sys, time
from reportgen.blas_threads import import_numpy_with_one_blas_thread
import_numpy_with_one_blas_thread()
sys.modules["papermill.s3"] = None
result = {}
for name in sys.argv[1].split(","):
    before = time.process_time(); importlib.import_module(name); result[name] = time.process_time() - before
print(json.dumps(result)); sys.stdout.flush(); os._exit(0)
'''


def child_cpu(command: list[str], stdin: bytes = b"") -> tuple[float, str]:
    """Run ``command`` to its end: its user + system CPU (``wait4``) and its standard output."""
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=out, cwd=ROOT,
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})
        process.stdin.write(stdin)
        process.stdin.close()
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode:
            raise SystemExit(f"{command[:3]} ended with {process.returncode}")
        out.seek(0)
        return usage.ru_utime + usage.ru_stime, out.read().decode()


def rule_outputs(source: Path, into: Path) -> Path:
    subprocess.run([sys.executable, "-m", "reportgen", "analyze", "-q", "--no-cache", str(source), "-o", str(into)],
                   check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return into


def worker_request(rules: Path, out: Path) -> bytes:
    parameters = {"source": str(rules), "output_dir": str(out), "job_name": "bench", "standalone": True,
                  "notes": [], "description": "bench", "incomplete": False, "source_label": str(rules), "cost": {}}
    return (json.dumps({"version": 1, "parameters": parameters, "notebook": None, "html": str(out / "page.html"),
                        "ipynb": None}) + "\n").encode()


def summary(rows: list[dict]) -> list[tuple[str, float, float, float]]:
    return [(key, statistics.median(r[key] for r in rows), min(r[key] for r in rows), max(r[key] for r in rows))
            for key in rows[0]]


def print_rows(title: str, rows: list[dict]) -> None:
    print(f"\n{title}\n{'':46} {'median':>7} {'min':>7} {'max':>7}  (CPU s)")
    for key, median, low, high in summary(rows):
        print(f"{key:46} {median:7.3f} {low:7.3f} {high:7.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--imports", action="store_true", help="what each third-party package adds")
    args = parser.parse_args()
    python = sys.executable
    subprocess.run([python, "-m", "compileall", "-q", str(ROOT / "reportgen")], check=True, stdout=subprocess.DEVNULL)
    bare = [{"interpreter start (python -c pass)": child_cpu([python, "-c", "pass"])[0]} for _ in range(args.runs)]
    print_rows("every process", bare)
    if args.imports:
        rows = [json.loads(child_cpu([python, "-c", IMPORT_STEPS, ",".join(IMPORTS)])[1]) for _ in range(args.runs)]
        print_rows("third-party imports, each after the ones above (numpy first)", rows)
    for source in args.sources or [ROOT / "sample_data"]:
        with tempfile.TemporaryDirectory(prefix="bench-page-") as tmp:
            rules, out = rule_outputs(source, Path(tmp) / "rules"), Path(tmp) / "out"
            out.mkdir()
            rows = []
            for _ in range(args.runs):
                whole, reply = child_cpu([python, "-m", "reportgen.render.worker"], worker_request(rules, out))
                if '"ok": true' not in reply:
                    raise SystemExit(f"the worker answered {reply!r}")
                _, text = child_cpu([python, "-c", PHASES, str(rules), str(out)])
                rows.append({"worker process, whole": whole, **json.loads(text)})
            print_rows(f"{source} (page {(out / 'page.html').stat().st_size:,} B)", rows)


if __name__ == "__main__":
    main()
