"""Command line: ``reportgen generate SOURCE -o OUT.html`` and ``reportgen check report.json``.

Errors the user can act on end with one line on stderr and exit code 2; nothing else
prints a traceback unless ``--debug`` is given. Exit codes: see ``reportgen.errors``.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import os
import signal
import sys
import threading
from pathlib import Path

from reportgen import __version__, interrupts
from reportgen.blas_threads import import_numpy_with_one_blas_thread
from reportgen.garbage_collector import freeze_imported_objects, thaw_imported_objects
from reportgen.readers.heap import allow_heap_reuse
from reportgen.errors import (EXIT_INPUT, EXIT_INTERNAL, EXIT_OK, EXIT_RULE_FIRED, InputError, ReportgenError,
                              environment_message, expanduser)
from reportgen.environment import check as check_environment
from reportgen.output_set import OutputSet, command_inputs
from reportgen.terminal_text import printable_line

EXIT_CODES_HELP = ("exit codes: 0 done; 1 what --fail-on lists was found (every output was still written); "
                   "2 usage or input error (one line on stderr); 3 internal error")


def _add_ci_options(parser: argparse.ArgumentParser) -> None:
    ci = parser.add_argument_group("CI outputs (see docs/ci.md)")
    ci.add_argument("--junit", type=Path, default=None, metavar="PATH",
                    help="write the rules as JUnit XML: a failure per rule that fired, skipped when it had no data "
                         "(- : standard output)")
    ci.add_argument("--markdown", type=Path, default=None, metavar="PATH",
                    help="write a compact Markdown summary (duration, key percentiles, rules that fired; "
                         "- : standard output)")
    ci.add_argument("--no-step-summary", action="store_true",
                    help="do not append the Markdown summary to $GITHUB_STEP_SUMMARY (done when it is set)")
    ci.add_argument("--fail-on", default="none", metavar="any|none|NAME,NAME",
                    help="exit with code 1 when the report shows one of these (default: none; outputs are written "
                         "first): a diagnosis status (problems, insufficient-data), a cause the diagnosis found "
                         "(input-pipeline, straggler, ...), a rule that fired (LowGPUUtilization, ...); any: any "
                         "rule fired, even one the diagnosis explains away (see docs/ci.md)")


_HELP = {"prices": True}  # main() sets it: the shipped price table is read for --help only


def _prices_note() -> str:
    if not _HELP["prices"]:
        return "shipped table: see --help"
    from reportgen.cost import shipped_table_note

    return shipped_table_note().replace("%", "%%")


def _common() -> argparse.ArgumentParser:
    """Options every command takes (an argparse parent)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    common.add_argument("--debug", action="store_true",
                        help="show tracebacks of internal errors; generate: make the page in this process, so "
                             "breakpoint() in a section builder works, and fail (exit 3) on a section that raises")
    return common


def _sources(*, recompute: bool = True, analysis: bool = True) -> argparse.ArgumentParser:
    """How a source is read (an argparse parent): the download cache and AWS profile; with ``analysis`` the
    rule parameters and the engine's options; with ``recompute``, --recompute."""
    src = argparse.ArgumentParser(add_help=False)
    if recompute:
        src.add_argument("--recompute", action="store_true",
                         help="analyse the raw profiler data with reportgen's engine even when rule outputs exist")
    src.add_argument("--cache-dir", type=Path, default=None,
                     help="where S3 downloads, each profiler trace's reduction (CACHE_DIR/traces) and the "
                          "--incremental records are cached (default: $REPORTGEN_CACHE_DIR, else ~/.cache/reportgen "
                          "or $XDG_CACHE_HOME/reportgen)")
    src.add_argument("--no-cache", action="store_true",
                     help="read every profiler trace in full and make the page anew, neither using nor filling "
                          "the trace cache or the page cache (also $REPORTGEN_NO_CACHE=1; see docs/beyond-sagemaker.md)")
    src.add_argument("--profile", default=None, help="AWS profile to use (default: the usual boto3 lookup)")
    if analysis:
        src.add_argument("--rule-param", action="append", default=[], metavar="RULE.PARAM=VALUE",
                         help="override a rule parameter, e.g. LowGPUUtilization.threshold_p95=80 (repeatable)")
        src.add_argument("--config", type=Path, default=None, help="TOML or YAML file with rule parameters")
        src.add_argument("--scheduler", default=None, metavar="local[:N]|tcp://HOST:PORT",
                         help="reduce the raw system metrics (one task per node) and the PyTorch profiler "
                              "traces (one task per rank) on Dask: a local cluster of N worker processes "
                              "(default: one per core) or an existing scheduler; needs pip install "
                              "'reportgen[dask]' (see docs/distributed.md)")
        src.add_argument("--incremental", action="store_true",
                         help="cache the parsed system metrics per file group, so the next report of a live job "
                              "reads only new or grown files (cache under CACHE_DIR/system-records; see "
                              "docs/distributed.md)")
    return src


SOURCE_HELP = ("a local folder (rule outputs or raw profiler data), an s3:// URI, a processing-job or training-job "
               "ARN, or job:NAME for a training-job name (a bare word is a local folder)")


def _parser() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(
        prog="reportgen",
        description="Turn the profiling data of an ML training job into one standalone HTML report.",
    )
    parser.add_argument("--version", action="version", version=f"reportgen {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    gen = sub.add_parser(
        "generate", parents=[common, _sources()],
        help="make the HTML report (and report.json) for one training job",
        description="Make one self-contained HTML report, plus a machine-readable JSON file beside it.",
    )
    gen.add_argument("source", metavar="SOURCE", help=SOURCE_HELP)
    gen.add_argument("-o", "--output", type=Path, default=Path("report.html"),
                     help="HTML file to write (default: report.html)")
    gen.add_argument("--json", type=Path, default=None, dest="json_path",
                     help="where to write the JSON summary (default: OUTPUT with .json suffix; - : standard output)")
    gen.add_argument("--job-name", default="", help="name shown in the report header (default: from the folder)")
    gen.add_argument("--keep-notebook", type=Path, default=None, metavar="PATH",
                     help="also save the executed notebook here")
    gen.add_argument("--rule-outputs", type=Path, default=None, metavar="DIR",
                     help="also keep the rule outputs the report was made from in DIR (a new or empty folder): "
                          "the 11 rule JSONs in SageMaker's schema plus timeline.json and data-quality.json; "
                          "'reportgen generate DIR' renders the same report")
    gen.add_argument("--instance", default=None, metavar="TYPE",
                     help="instance type, e.g. ml.p3.8xlarge, for the cost line (default: from the job description)")
    gen.add_argument("--count", type=int, default=None, help="instance count for the cost line (default: from the job "
                                                             "description, else 1 with --instance)")
    gen.add_argument("--region", default=None, help="region of the prices (default: the job's, else us-east-1)")
    gen.add_argument("--prices", type=Path, default=None, metavar="FILE",
                     help="TOML file of hourly prices laid over the shipped table (docs/compare.md#cost); "
                          + _prices_note())
    _add_ci_options(gen)
    check = sub.add_parser(
        "check", parents=[common],
        help="make the CI outputs (JUnit XML, Markdown summary, --fail-on) from an existing report.json",
        description="Make the CI outputs from a report.json written by 'reportgen generate'. Without "
                    "--junit or --markdown (and no $GITHUB_STEP_SUMMARY) the Markdown summary goes to stdout.",
        epilog=EXIT_CODES_HELP,
    )
    check.add_argument("report_json", type=Path, metavar="REPORT_JSON", help="a report.json")
    check.add_argument("--base", type=Path, default=None, metavar="BASE_JSON",
                       help="a base run's report.json: the Markdown adds the step-time comparison against it")
    check.add_argument("--fail-on-regression", default=None, metavar="PCT",
                       help="with --base: exit with code 1 when REPORT_JSON's median step is slower than the "
                            "base's by more than PCT (e.g. 5%%) and beyond the runs' noise, or when it cannot "
                            "judge (see --allow-unjudged)")
    check.add_argument("--allow-unjudged", action="store_true",
                       help="let --fail-on-regression pass when it cannot judge (no step durations and no job "
                            "durations, a median step of 0 s); it says so in the Markdown and JUnit")
    _add_ci_options(check)
    gen.epilog = EXIT_CODES_HELP
    _add_compare_parser(sub, common)
    trd = sub.add_parser(
        "trend", parents=[common], help="several runs' report.json in one table: step time, GPU use, cost, causes, "
                                        "regressions",
        description="Put several runs' report.json side by side, in the order given: median step time and steps "
                    "per second, the change against the previous run with its interval (REGRESSION when slower by "
                    "more than --threshold beyond the runs' noise), GPU/CPU use, duration, cost and the causes found.",
        epilog="exit codes: 0 done; 1 --fail-on-change tripped or cannot judge; 2 usage or input error (one line "
               "on stderr); 3 internal error")
    trd.add_argument("reports", nargs="+", type=Path, metavar="REPORT_JSON", help="two or more report.json, oldest first")
    trd.add_argument("-o", "--output", type=Path, default=None,
                     help="file to write (default: trend.html, or trend.md with --format md; - : standard output); "
                          "a name for the other format is refused")
    trd.add_argument("--format", choices=("html", "md"), default="html", dest="fmt", help="html (default) or md")
    trd.add_argument("--label", action="append", default=[], metavar="NAME",
                     help="the runs' labels, one per report in order (default: each report's job name)")
    trd.add_argument("--threshold", default="5%", metavar="PCT",
                     help="slowdown against the previous run that marks a regression (default: 5%%)")
    trd.add_argument("--json", type=Path, default=None, dest="json_path", help="also write the numbers as JSON")
    trd.add_argument("--fail-on-change", action="store_true",
                     help="exit with code 1 when the history's latest change point is a slowdown by more than "
                          "--threshold beyond its interval, or when the history cannot be judged (fewer than "
                          "5 runs with step times, no ruptures)")
    trd.add_argument("--allow-unjudged", action="store_true",
                     help="let --fail-on-change pass when it cannot judge (it says so)")
    snap = sub.add_parser(
        "memory-snapshot", parents=[common], help="summarise a torch.cuda.memory._dump_snapshot() file",
        description="Read a CUDA memory snapshot (torch.cuda.memory._dump_snapshot(), the pickle attached to "
                    "out-of-memory reports) without running any code in it and say per device what was reserved, "
                    "allocated and reserved but unallocated, the largest live blocks with the frame that allocated "
                    "them, and the out-of-memory events. A pickle that would run code is refused.",
        epilog="exit codes: 0 done; 2 usage or input error, a refused snapshot included (one line on stderr); "
               "3 internal error")
    snap.add_argument("snapshot", type=Path, metavar="SNAPSHOT", help="the snapshot file (a pickle)")
    snap.add_argument("--json", type=Path, default=None, dest="json_path", help="also write the summary as JSON")
    ana = sub.add_parser(
        "analyze", parents=[common, _sources(recompute=False)],
        help="run only the analysis engine: raw profiler data -> the 11 rule outputs in SageMaker's schema",
        description="Analyse raw profiler data (SageMaker's system/ and framework/, or PyTorch profiler traces) "
                    "with reportgen's engine and write the rule outputs into a folder, without a report: the 11 "
                    "rule JSONs in SageMaker's schema plus timeline.json and data-quality.json. "
                    "'reportgen generate DIR' renders them.",
        epilog=EXIT_CODES_HELP)
    ana.add_argument("source", metavar="SOURCE", help=SOURCE_HELP)
    ana.add_argument("-o", "--output", type=Path, required=True, metavar="DIR",
                     help="folder to write the rule outputs into (new, empty, or an earlier analyze's)")
    rec = sub.add_parser(
        "record", parents=[common],
        help="run a training command and record system (and GPU) metrics in SageMaker's layout",
        description="Run COMMAND, sample CPU cores, memory, disk, network (psutil) and NVIDIA GPUs (NVML, "
                    "optional) while it runs, and write SageMaker's system-metrics layout for `generate`. "
                    "The command's exit code is passed through.",
    )
    rec.add_argument("--interval", default="500ms", help="sampling interval, e.g. 500ms, 1s (default: 500ms)")
    rec.add_argument("--out", default=None, help="recording folder (default: ./reportgen-recording-<time>)")
    rec.add_argument("--trace-dir", default=None, metavar="DIR",
                     help="a PyTorch profiler trace folder the command writes; copied into the recording at the end")
    rec.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND ...", help="the command to run")
    return parser


def _add_compare_parser(sub, common: argparse.ArgumentParser) -> None:
    cmp = sub.add_parser(
        "compare", parents=[common, _sources(analysis=False)], help="compare two training jobs (duration, utilization, rules, cost) in one HTML page",
        description="Compare run A with run B: one standalone HTML (or Markdown) page plus compare.json.")
    cmp.add_argument("source_a", metavar="A", help="the first run: anything generate accepts")
    cmp.add_argument("source_b", metavar="B", help="the second run: anything generate accepts")
    cmp.add_argument("-o", "--output", type=Path, default=None,
                     help="file to write (default: compare.html, or compare.md with --format md); a name for the "
                          "other format is refused")
    cmp.add_argument("--format", choices=("html", "md"), default="html", dest="fmt",
                     help="html (default) or md (Markdown, e.g. for a pull-request comment)")
    cmp.add_argument("--json", type=Path, default=None, dest="json_path",
                     help="where to write compare.json (default: OUTPUT with .json suffix; none with -o - "
                          "unless given)")
    for side in ("a", "b"):
        cmp.add_argument(f"--instance-{side}", default=None, metavar="TYPE",
                         help=f"instance type of {side.upper()} (default: from its job description)")
        cmp.add_argument(f"--count-{side}", type=int, default=None, metavar="N",
                         help=f"instance count of {side.upper()} (default: from its job description, else 1)")
    cmp.add_argument("--region", default=None, help="region of the prices (default: each job's, else us-east-1)")
    cmp.add_argument("--prices", type=Path, default=None, metavar="FILE",
                     help="TOML file of hourly prices laid over the shipped table (docs/compare.md#cost); "
                          + _prices_note())
    cmp.add_argument("--fail-on-regression", default=None, metavar="PCT",
                     help="exit with code 1 when B's median step is slower than A's by more than PCT (e.g. 5%%) "
                          "and beyond the runs' noise (bootstrap interval of the ratio; job durations when "
                          "steps are missing), or when it cannot judge; outputs are written first (see docs/ci.md)")
    cmp.add_argument("--allow-unjudged", action="store_true",
                     help="let --fail-on-regression pass when it cannot judge (it says so)")
    cmp.add_argument("--force", action="store_true",
                     help="compare runs the comparability check finds unrelated (another operator mix: another "
                          "model; different batch sizes); without it they get 'not comparable because ...' and no "
                          "verdict")
    for side in ("a", "b"):
        cmp.add_argument(f"--batch-size-{side}", type=int, default=None, metavar="N", dest=f"batch_{side}",
                         help=f"run {side.upper()}'s batch size (default: its recording's command line's "
                              "--batch-size, else unknown); different batch sizes are not comparable without "
                              "--force, which adds the time per sample")


def _source_options(args):
    """How the command's source(s) are read, from the options of the ``_sources`` parent."""
    from reportgen.pipeline import EngineOptions, SourceOptions

    engine = None
    if getattr(args, "scheduler", None) is not None or getattr(args, "incremental", False):
        cache_root = None
        if args.incremental:
            from reportgen.sources.s3 import default_cache_dir

            cache_root = expanduser(args.cache_dir) if args.cache_dir else default_cache_dir()
        engine = EngineOptions(scheduler=args.scheduler, cache_root=cache_root)
    return SourceOptions(cache_dir=args.cache_dir, recompute=getattr(args, "recompute", False),
                         trace_cache=not args.no_cache,
                         rule_params=_rule_params(getattr(args, "config", None), getattr(args, "rule_param", [])),
                         session_kwargs={"profile_name": args.profile} if args.profile else None, engine=engine)


def _analyze(args, say) -> int:
    from reportgen.pipeline import analyze

    out = analyze(args.source, args.output, _source_options(args), progress=say)
    say(f"wrote the rule outputs into {out}")
    return EXIT_OK


def _compare(args, say) -> int:
    from reportgen.compare.run import CompareOptions, compare
    from reportgen.pipeline import CostOptions

    from reportgen.compare.regression import parse_threshold

    threshold = parse_threshold(args.fail_on_regression) if args.fail_on_regression is not None else None
    options = CompareOptions(source=_source_options(args), fmt=args.fmt, json_path=args.json_path,
                             a=CostOptions(args.instance_a, args.count_a, args.region, args.prices),
                             b=CostOptions(args.instance_b, args.count_b, args.region, args.prices),
                             fail_on_regression=threshold, allow_unjudged=args.allow_unjudged,
                             force=args.force, batch_a=args.batch_a, batch_b=args.batch_b)
    result = compare(args.source_a, args.source_b, args.output, options, progress=say)
    also = f" and {_name(result.json_path)}" if result.json_path is not None else " (no compare.json: give --json PATH)"
    say(f"wrote {_name(result.output_path)}{also} in {result.seconds:.1f} s")
    return _regression_exit(result.regression, args.allow_unjudged)


def _regression_exit(regression, allow_unjudged: bool = False) -> int:
    """Exit code 1, with the verdict on stderr, when the regression gate failed: it tripped, or it could not
    judge and was not told --allow-unjudged (fails closed); a line on stderr for an allowed unjudged gate too."""
    gate = regression.gate(allow_unjudged) if regression is not None else ""
    if gate in ("failed", "not judged"):
        print(f"reportgen: {regression.gate_message(allow_unjudged)}", file=sys.stderr)
    return EXIT_RULE_FIRED if gate == "failed" else EXIT_OK


def _trend(args, say) -> int:
    from reportgen.compare.output_name import page_path
    from reportgen.compare.regression import parse_threshold
    from reportgen.compare.trend import trend

    output = page_path(args.output, args.fmt, "trend")
    threshold = parse_threshold(args.threshold)
    runs, history = trend(args.reports, output, fmt=args.fmt, labels=args.label, threshold=threshold,
                          json_path=args.json_path)
    marked = [r.label for r in runs if r.against_previous is not None and r.against_previous.tripped]
    say(f"wrote {_name(output)}: {len(runs)} runs" + (f", regression at {', '.join(marked)}" if marked else "")
        + (f", change at {', '.join(c.label for c in history.changes)}" if history.changes else ""))
    if not args.fail_on_change:
        return EXIT_OK
    if history.unjudged:  # fails closed, as the regression gate does
        how = "allowed by --allow-unjudged" if args.allow_unjudged else "exit code 1; --allow-unjudged lets it pass"
        print(f"reportgen: --fail-on-change cannot judge: {history.unjudged} ({how})", file=sys.stderr)
        return EXIT_OK if args.allow_unjudged else EXIT_RULE_FIRED
    slower = history.latest_slowdown(threshold)
    if slower is None:
        return EXIT_OK
    print(f"reportgen: --fail-on-change tripped: the step time changed by {slower.text()}, more than "
          f"{threshold * 100:g} % (exit code 1)", file=sys.stderr)
    return EXIT_RULE_FIRED


def _memory_snapshot(args, say) -> int:
    import json

    from reportgen.readers.memory_snapshot import describe, load_snapshot, summarize

    outputs = OutputSet()  # checked before the snapshot is read: --json never replaces it (or another input)
    if args.json_path is not None:
        outputs.add("--json", args.json_path)
    summary = summarize(load_snapshot(args.snapshot))
    _write_stdout("\n".join(describe(summary)) + "\n")
    if args.json_path is not None:
        outputs.commit({"--json": json.dumps(summary, indent=1) + "\n"})
        say(f"wrote {_name(args.json_path)}")
    return EXIT_OK


def _progress(quiet: bool):
    def say(message: str) -> None:
        if not quiet:
            _print_line(f"reportgen: {message}")
    return say


def _rule_params(config: Path | None, overrides: list[str]):
    """Rule parameters from --config then --rule-param (validated before any work starts)."""
    if config is None and not overrides:
        return None
    from reportgen.engine.params import load_config, parse_overrides

    base = load_config(config) if config else None
    return parse_overrides(overrides, base=base) if overrides else base


def _ci_outputs(args, data: dict, say, regression=None, base: dict | None = None) -> int:
    """Write --junit/--markdown/step summary from report.json's data; the --fail-on verdict (and, for
    check --base, the regression gate's, and the hardware use against the base's report.json ``base``)."""
    from reportgen.ci_outputs import write_ci_outputs

    allow = getattr(args, "allow_unjudged", False)
    extra = _against_base(regression, base, data, allow)
    outcome = write_ci_outputs(data, junit=args.junit, markdown=args.markdown,
                               step_summary=not args.no_step_summary, fail_on=args.fail_on_parsed or "none",
                               extra_markdown=extra, extra_case=_gate_case(regression, allow))
    for path in outcome.written:
        say(f"wrote {_name(path)}")
    code = _regression_exit(regression, allow)
    if outcome.tripped:
        _print_line(f"reportgen: {outcome.tripped.message()} (exit code 1)")
        return EXIT_RULE_FIRED
    return code


def _against_base(regression, base: dict | None, data: dict, allow_unjudged: bool = False) -> str:
    """check --base's Markdown after the verdict: the regression check, then the hardware use against the base."""
    from reportgen.ci_outputs import hardware_change_lines

    if regression is None:
        return ""
    return "\n".join([*regression.markdown(allow_unjudged), *hardware_change_lines(base or {}, data)])


def _gate_case(regression, allow_unjudged: bool):
    """The regression gate as a JUnit test case (none without --fail-on-regression)."""
    from reportgen.ci_outputs import ExtraCase

    gate = regression.gate(allow_unjudged) if regression is not None else ""
    if not gate:
        return None
    state = {"failed": "failure", "passed": "passed", "not judged": "skipped"}[gate]
    kind = "CannotJudge" if regression.unjudged else "Regression"
    return ExtraCase("reportgen.regression", "regression-gate", state, regression.summary(), kind)


def _check_regression(args, data: dict):
    """check --base BASE.json [--fail-on-regression PCT]: this report.json against the base's (the regression
    check and the base's report.json; (None, None) without --base)."""
    if args.base is None:
        if args.fail_on_regression is not None or args.allow_unjudged:
            flag = "--fail-on-regression" if args.fail_on_regression is not None else "--allow-unjudged"
            raise InputError(f"{flag} needs --base BASE_JSON (the base run's report.json)")
        return None, None
    from reportgen.compare.regression import judge, load_gated_report, parse_threshold
    from reportgen.compare.work import different_work, work_of_report

    threshold = parse_threshold(args.fail_on_regression) if args.fail_on_regression is not None else None
    load_gated_report(args.report_json, data)
    base = load_gated_report(args.base)
    other_work = different_work(work_of_report(base), work_of_report(data), ("BASE", "NEW"))
    return judge(base["sections"], data["sections"], threshold, different_work=other_work), base


def _parsed_fail_on(text: str | None):
    """--fail-on, validated before any work starts: a typo in a rule name must not cost a whole run. ``none``, the
    default, is None: it needs no vocabulary, so ``generate`` imports the CI outputs (and with them the diagnosis's
    cause registry, ~0.04 CPU s) only when it writes them."""
    if (text or "none").strip().lower() in ("none", ""):
        return None
    from reportgen.ci_outputs import parse_fail_on

    return parse_fail_on(text)


def _run(args, say) -> int:
    args.fail_on_parsed = _parsed_fail_on(args.fail_on)
    if args.command == "check":
        from reportgen.ci_outputs import ci_output_set, markdown_summary
        from reportgen.report.json_views import load_report_json

        # every output checked before anything is read (one of them naming an input is refused first)
        ci_output_set(args.junit, args.markdown, None if args.no_step_summary else os.environ.get("GITHUB_STEP_SUMMARY"))
        data = load_report_json(args.report_json)
        regression, base = _check_regression(args, data)
        if not (args.junit or args.markdown or
                (os.environ.get("GITHUB_STEP_SUMMARY") and not args.no_step_summary)):
            _write_stdout(markdown_summary(data, _against_base(regression, base, data)))
        return _ci_outputs(args, data, say, regression, base)

    from reportgen.pipeline import CostOptions, GenerateOptions, generate

    options = GenerateOptions(
        source=_source_options(args), job_name=args.job_name, json_path=args.json_path,
        keep_notebook=args.keep_notebook, rule_outputs=args.rule_outputs, junit=args.junit, markdown=args.markdown,
        debug=args.debug, cost=CostOptions(instance=args.instance, count=args.count, region=args.region, prices_file=args.prices))
    result = generate(args.source, args.output, options, progress=say)
    say(f"wrote {_name(result.html_path)} ({result.html_bytes / 1e6:.1f} MB) and {_name(result.json_path)} "
        f"in {result.seconds:.1f} s")
    for path in result.written[2:]:
        say(f"wrote {_name(path)}")
    if not (args.fail_on_parsed or (os.environ.get("GITHUB_STEP_SUMMARY") and not args.no_step_summary)):
        return EXIT_OK
    args.junit = args.markdown = None  # written above, with the report
    return _ci_outputs(args, result.report, say)


def _write_stdout(text: str) -> None:
    """Standard output full (``> /dev/full``) or closed is an error of the environment naming it."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as err:
        if not err.filename and not isinstance(sys.stdout, _ClosedStream):  # that one says it already
            err.filename = "standard output"
        raise


def _name(path) -> str:
    return "standard output" if str(path) == "-" else str(path)


def main(argv: list[str] | None = None) -> int:
    _HELP["prices"] = any(arg in ("-h", "--help") for arg in (sys.argv[1:] if argv is None else argv))
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if args.command in _ENGINE_COMMANDS:  # before the first numpy import of the command (record and check stay light)
        import_numpy_with_one_blas_thread()
    if getattr(args, "scheduler", None) is not None:
        _start_local_workers_early(args.scheduler)
    if argv is None and args.command in _ENGINE_COMMANDS:  # the command line's own process, not a caller's
        allow_heap_reuse()  # the rules' temporaries not faulted in again and again (readers.heap)
        freeze_imported_objects()
        from reportgen.readers.forked_call import allow

        allow()  # the system metrics may be read in a forked child (readers.forked_call)
    _usable_standard_streams()
    interrupted_run = [False]
    with interrupts.watch() as interrupted:
        code = _main(args, interrupted)
        interrupted_run[0] = bool(interrupted)
    if code in _INTERRUPT_CODES and interrupted_run[0] and argv is None:
        # The command line's own process: leave without the interpreter's shutdown, during which a
        # library thread still inside C++ (DuckDB) can abort the process ("terminate called after
        # throwing ..."), turning a clean interrupt into SIGABRT. Every output and work folder is
        # already cleaned up by now (context managers ran while the interrupt propagated).
        _flush_quietly()
        os._exit(code)
    if argv is None and args.command in _ENGINE_COMMANDS:
        _leave_without_teardown(code)
        thaw_imported_objects()  # the interpreter's teardown follows: every object finalized as usual
    return code


_ENGINE_COMMANDS = ("generate", "analyze", "compare")  # those that run the engine or make a page


def _leave_without_teardown(code: int) -> None:
    """The command line's own process after a command that ran the engine or made a page, every output
    written and closed and every work folder removed: the exit handlers run (multiprocessing's, Dask's,
    temporary folders' finalizers), the standard streams are flushed, and the process ends without the
    interpreter tearing down every module and object one by one. That teardown is CPU only (no system
    call in it under strace) and took ~0.22 s after ``--scheduler local:2`` (Dask's modules and objects):
    -0.19 s of wall in 8 paired runs of ``analyze`` on 2 ranks; -0.04 s in one process. Where the
    interpreter has no exit-handler runner to call, or a thread that the interpreter would wait for is still
    running, the process ends normally."""
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    waited_for = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if run_exit_handlers is None or waited_for:
        return
    run_exit_handlers()
    _flush_quietly()
    os._exit(code)


def _start_local_workers_early(spec: str) -> None:
    """``--scheduler local[:N]``: the workers' fork server starts now, so its imports (Dask and the trace
    reader, ~0.6 s) run on another core while this process finds its input and imports Dask; the cluster
    itself starts where it is used. A spec that is wrong, or no Dask, is reported there, not here."""
    from reportgen.cluster.client import start_fork_server
    from reportgen.cluster.scheduler import dask_installed, parse_scheduler

    try:
        local = parse_scheduler(spec).local
    except InputError:
        return
    if local and dask_installed():
        with contextlib.suppress(OSError):  # no socket here (a full or read-only /tmp): the cluster's start says it
            start_fork_server()


_INTERRUPT_CODES = {interrupts.exit_code(s) for s in interrupts.STOP_SIGNALS}


def _inputs(args) -> list[tuple]:
    """Every path the command reads, by the option that names it: no output may be one of them or lie in
    one of their folders (``output_set.command_inputs``)."""
    from reportgen.sources.layout import read_from_source  # sources/__init__ imports the resolver (20 ms)

    sources = [(role, getattr(args, name, None), read_from_source)
               for role, name in (("SOURCE", "source"), ("A", "source_a"), ("B", "source_b"))]
    files = [(role, getattr(args, name, None)) for role, name in (
        ("REPORT_JSON", "report_json"), ("--base", "base"), ("--config", "config"), ("--prices", "prices"),
        ("--trace-dir", "trace_dir"), ("SNAPSHOT", "snapshot"))]
    files += [("REPORT_JSON", path) for path in getattr(args, "reports", None) or ()]
    return [entry for entry in (*sources, *files) if entry[1] is not None]


def _main(args, interrupted: list) -> int:
    say = _progress(args.quiet)
    try:
        check_environment()  # REPORTGEN_* values and TZ: one line naming a bad one, before any work
        with command_inputs(_inputs(args)):
            return _command(args, say)
    except BaseException as err:
        if isinstance(err, KeyboardInterrupt) or (interrupted and isinstance(err, Exception)):
            # a stop signal, also when a library turned the KeyboardInterrupt into another exception
            signum = interrupts.received()
            what = "" if signum in (None, signal.SIGINT) else f" by {interrupts.name(signum)}"
            _print_line(f"reportgen: interrupted{what}; nothing was written")
            return interrupts.exit_code(signum)
        if not isinstance(err, Exception):
            raise
        return _failure(err, args)


def _command(args, say) -> int:
    if args.command == "record":
        return _record(args, say)
    if args.command == "compare":
        return _compare(args, say)
    if args.command == "analyze":
        return _analyze(args, say)
    if args.command == "trend":
        return _trend(args, say)
    if args.command == "memory-snapshot":
        return _memory_snapshot(args, say)
    return _run(args, say)


def _failure(err: Exception, args) -> int:
    """One line on stderr for a failure, and its exit code: 2 for the input or the environment (the one
    mapping: ``errors.environment_message``), 3 only for a bug of reportgen's own."""
    if isinstance(err, ReportgenError):
        _print_line(f"reportgen: error: {err}")
        return err.exit_code
    message = environment_message(err)
    if message is not None:
        _print_line(f"reportgen: error: {message}")
        return EXIT_INPUT
    if args.debug:  # a bug: one line, unless asked for details
        raise err
    _print_line(f"reportgen: internal error: {type(err).__name__}: {err} (rerun with --debug for details)")
    return EXIT_INTERNAL


def _print_line(line: str) -> None:
    """The one error line, whatever state stderr is in (closed, a terminal that cannot show a character)."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        print(printable_line(line), file=stream, flush=True)
    except (OSError, ValueError):
        pass


class _ClosedStream:
    """Standard output closed by the caller (``>&-``: Python sets ``sys.stdout`` to None): writing to it
    is an error of the environment (exit 2, one line), not an AttributeError (exit 3)."""

    encoding = "utf-8"

    def __init__(self, name: str) -> None:
        self.name = name

    def write(self, _text) -> int:
        raise OSError(errno.EBADF, f"{self.name} is closed")

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        raise OSError(errno.EBADF, f"{self.name} is closed")


def _usable_standard_streams() -> None:
    """A closed stdout raises a worded OSError when written; a terminal whose encoding cannot show a
    character (a Latin-1 terminal, a job name in Chinese) shows it escaped instead of failing the run."""
    if sys.stdout is None:
        sys.stdout = _ClosedStream("standard output")
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(Exception):
                reconfigure(errors="backslashreplace")


def _flush_quietly() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _record(args, say) -> int:
    """``reportgen record``: the command's own exit code, or 2 for a usage error."""
    from reportgen.recorder.run import main as record_main

    return record_main(args, say)
