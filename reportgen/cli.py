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
    gen.add_argument("source", metavar="SOURCE", help="a folder with SageMaker ProfilerReport rule outputs (profiler-reports/*.json)")
    gen.add_argument("-o", "--output", type=Path, default=Path("report.html"),
                     help="HTML file to write (default: report.html)")
    gen.add_argument("--json", type=Path, default=None, dest="json_path",
                     help="where to write the JSON summary (default: OUTPUT with .json suffix)")
    gen.add_argument("--job-name", default="", help="name shown in the report header (default: from the folder)")
    gen.add_argument("--keep-notebook", type=Path, default=None, metavar="PATH",
                     help="also save the executed notebook here")
    gen.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    gen.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    return parser


def _progress(quiet: bool):
    def say(message: str) -> None:
        if not quiet:
            print(f"reportgen: {message}", file=sys.stderr, flush=True)
    return say


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    say = _progress(args.quiet)
    try:
        from reportgen.pipeline import generate

        result = generate(args.source, args.output, job_name=args.job_name, json_path=args.json_path,
                          keep_notebook=args.keep_notebook, progress=say)
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
