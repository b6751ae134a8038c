"""Command line: ``reportgen generate SOURCE -o OUT.html``.

Errors the user can act on end with one line on stderr and exit code 2; nothing else
prints a traceback unless ``--debug`` is given.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reportgen import __version__
from reportgen.errors import EXIT_INTERNAL, EXIT_OK, ReportgenError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reportgen",
        description="Turn the profiling data of an ML training job into one standalone HTML report.",
    )
    parser.add_argument("--version", action="version", version=f"reportgen {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    gen = sub.add_parser(
        "generate",
        help="make the HTML report (and report.json) for one training job",
        description="Make one self-contained HTML report, plus a machine-readable JSON file beside it.",
    )
    gen.add_argument("source", metavar="SOURCE",
                     help="a local folder (rule outputs or raw profiler data), an s3:// URI, a processing-job "
                          "or training-job ARN, or a training-job name")
    gen.add_argument("-o", "--output", type=Path, default=Path("report.html"),
                     help="HTML file to write (default: report.html)")
    gen.add_argument("--json", type=Path, default=None, dest="json_path",
                     help="where to write the JSON summary (default: OUTPUT with .json suffix)")
    gen.add_argument("--job-name", default="", help="name shown in the report header (default: from the folder)")
    gen.add_argument("--keep-notebook", type=Path, default=None, metavar="PATH",
                     help="also save the executed notebook here")
    gen.add_argument("--recompute", action="store_true",
                     help="analyse the raw profiler data with reportgen's engine even when rule outputs exist")
    gen.add_argument("--rule-param", action="append", default=[], metavar="RULE.PARAM=VALUE",
                     help="override a rule parameter, e.g. LowGPUUtilization.threshold_p95=80 (repeatable)")
    gen.add_argument("--config", type=Path, default=None, help="TOML or YAML file with rule parameters")
    gen.add_argument("--cache-dir", type=Path, default=None,
                     help="where S3 downloads are cached (default: ~/.cache/reportgen or $XDG_CACHE_HOME)")
    gen.add_argument("--profile", default=None, help="AWS profile to use (default: the usual boto3 lookup)")
    gen.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    gen.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    rec = sub.add_parser(
        "record",
        help="run a training command and record system (and GPU) metrics in SageMaker's layout",
        description="Run COMMAND, sample CPU cores, memory, disk, network (psutil) and NVIDIA GPUs (NVML, "
                    "optional) while it runs, and write SageMaker's system-metrics layout for `generate`. "
                    "The command's exit code is passed through.",
    )
    rec.add_argument("--interval", default="500ms", help="sampling interval, e.g. 500ms, 1s (default: 500ms)")
    rec.add_argument("--out", default=None, help="recording folder (default: ./reportgen-recording-<time>)")
    rec.add_argument("--trace-dir", default=None, metavar="DIR",
                     help="a PyTorch profiler trace folder the command writes; copied into the recording at the end")
    rec.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    rec.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    rec.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND ...", help="the command to run")
    return parser


def _progress(quiet: bool):
    def say(message: str) -> None:
        if not quiet:
            print(f"reportgen: {message}", file=sys.stderr, flush=True)
    return say


def _rule_params(config: Path | None, overrides: list[str]):
    """Rule parameters from --config then --rule-param (validated before any work starts)."""
    if config is None and not overrides:
        return None
    from reportgen.engine.params import load_config, parse_overrides

    base = load_config(config) if config else None
    return parse_overrides(overrides, base=base) if overrides else base


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    say = _progress(args.quiet)
    if args.command == "record":
        return _record(args, say)
    try:
        from reportgen.pipeline import generate

        rule_params = _rule_params(args.config, args.rule_param)
        result = generate(args.source, args.output, job_name=args.job_name, json_path=args.json_path,
                          keep_notebook=args.keep_notebook, progress=say, cache_dir=args.cache_dir,
                          recompute=args.recompute, rule_params=rule_params,
                          session_kwargs={"profile_name": args.profile} if args.profile else None)
    except ReportgenError as err:
        print(f"reportgen: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("reportgen: interrupted; nothing was written", file=sys.stderr)
        return 130
    except Exception as err:  # a bug: one line, unless asked for details
        if args.debug:
            raise
        print(f"reportgen: internal error: {type(err).__name__}: {err} (rerun with --debug for details)",
              file=sys.stderr)
        return EXIT_INTERNAL
    say(f"wrote {result.html_path} ({result.html_bytes / 1e6:.1f} MB) and {result.json_path} "
        f"in {result.seconds:.1f} s")
    return EXIT_OK


def _record(args, say) -> int:
    """``reportgen record``: the command's own exit code, or 2 for a usage error."""
    try:
        from reportgen.recorder.run import main as record_main

        return record_main(args, say)
    except ReportgenError as err:
        print(f"reportgen: error: {err}", file=sys.stderr)
        return err.exit_code
    except Exception as err:  # a bug: one line, unless asked for details
        if args.debug:
            raise
        print(f"reportgen: internal error: {type(err).__name__}: {err} (rerun with --debug for details)",
              file=sys.stderr)
        return EXIT_INTERNAL
