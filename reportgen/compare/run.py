"""``compare``: two sources -> rule outputs each -> comparison notebook -> one standalone HTML (or Markdown).

Each side goes through ``prepare_rule_outputs`` exactly as ``generate``'s source does; the run is atomic
(everything is made in a private work folder, files are written to a temporary name and renamed).
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from reportgen.compare.batch import MAX_BATCH, BatchSize, from_hyperparameters
from reportgen.compare.output_name import page_path
from reportgen.compare.regression import Regression
from reportgen.cost import load_prices
from reportgen.sources.layout import local_job_name
from reportgen.errors import InputError, RenderError
from reportgen.output_set import OutputSet, is_stdout
from reportgen.pipeline import (
    CostOptions,
    Progress,
    SourceOptions,
    silent,
    prepare_rule_outputs,
)
from reportgen.rule_outputs import load_rule_outputs
from reportgen.workdir import work_folder

FORMATS = ("html", "md")


@dataclass(frozen=True)
class CompareOptions:
    """Everything ``compare`` takes besides the two sources and the output path (the CLI builds one).
    ``a``/``b``: each run's instance (default: from its job description), region and price table."""

    source: SourceOptions = field(default_factory=SourceOptions)
    fmt: str = "html"
    json_path: Path | None = None  # default: the output path with .json
    a: CostOptions = field(default_factory=CostOptions)
    b: CostOptions = field(default_factory=CostOptions)
    fail_on_regression: float | None = None  # allowed slowdown of B against A (fraction): the regression gate
    allow_unjudged: bool = False  # the gate passes (saying so) when it cannot judge, instead of failing closed
    force: bool = False  # a verdict even for runs the comparability check finds unrelated
    batch_a: int | None = None  # each run's batch size when given (--batch-size-a/-b; compare.batch)
    batch_b: int | None = None


@dataclass
class CompareResult:
    output_path: Path
    json_path: Path | None  # None: -o is standard output (or a device) and --json was not given
    output_bytes: int
    seconds: float
    regression: Regression | None = None  # with --fail-on-regression: B against A, judged with its threshold


def _side_spec(label: str, source: str, work_dir: Path, cost: CostOptions, progress: Progress,
               options: SourceOptions = SourceOptions(), batch_size: int | None = None) -> dict:
    instance, count, region = cost.instance, cost.count, cost.region
    prepared = prepare_rule_outputs(source, work_dir / label, options, lambda m: progress(f"{label}: {m}"))
    resolved = prepared.resolved
    load_rule_outputs(prepared.rule_dir)  # bad input fails fast, before the notebook starts
    instance_from = "command line" if instance else "job description" if resolved.instance_type else ""
    if count and not instance and not resolved.instance_type:
        raise InputError(f"--count-{label.lower()} given without --instance-{label.lower()}, and the job "
                         "description of that source gives no instance type")
    notes = list(resolved.notes)
    if resolved.incomplete:
        notes.insert(0, f"Run {label} was still running: its numbers cover the data written so far.")
    return {"rule_dir": str(prepared.rule_dir.resolve()),
            "name": resolved.job_name or local_job_name(source) or label,
            "source": str(source),
            "description": f"{resolved.description} — from the {prepared.used}",
            "instance_type": instance or resolved.instance_type,
            "instance_count": count or resolved.instance_count or (1 if instance else None),
            "instance_from": instance_from,
            "region": region or resolved.region,
            "notes": notes,
            **_batch(label, batch_size, resolved.hyperparameters)}


def _batch(label: str, given: int | None, hyperparameters) -> dict:
    """A side's batch size and where it was read: given with ``--batch-size-a/-b``, else by the job's
    hyperparameters (``compare.batch``); none here otherwise (a recording's command line is read with the side)."""
    known = BatchSize(given, f"--batch-size-{label.lower()}") if given is not None else \
        from_hyperparameters(hyperparameters)
    return {"batch": known.to_spec()} if known else {}


def compare(source_a: str, source_b: str, output: Path | None, options: CompareOptions = CompareOptions(),
            progress: Progress = silent) -> CompareResult:
    from reportgen.render.page_cache import cached_page, expects_hit
    from reportgen.render.process import NotebookProcess
    from reportgen.resources import compare_notebook_path

    fmt, prices_file = options.fmt, options.a.prices_file
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r} (use html or md)")
    for flag, value in (("--count-a", options.a.count), ("--count-b", options.b.count),
                        ("--batch-size-a", options.batch_a), ("--batch-size-b", options.batch_b)):
        if value is not None and value < 1:
            raise InputError(f"{flag} must be at least 1")
    for flag, value in (("--batch-size-a", options.batch_a), ("--batch-size-b", options.batch_b)):
        if value is not None and value > MAX_BATCH:
            raise InputError(f"{flag} {value} is more than {MAX_BATCH} samples: no batch size")
    started = time.perf_counter()
    output = page_path(output, fmt, "compare")  # None: compare.html / compare.md; never the other format's name
    outputs = OutputSet()  # both outputs checked before any work, written together (output_set.py)
    page_target = outputs.add("-o", output)
    # -o - (or a device): there is no place beside it, so compare.json is written only when --json asks
    json_path = options.json_path if is_stdout(options.json_path) else (
        Path(options.json_path) if options.json_path else
        None if page_target.kind != "file" else output.with_suffix(".json"))
    if json_path is not None:
        outputs.add("--json", json_path)
    load_prices(prices_file)  # a bad prices file is an input error before any work
    page_cache, stamp = _page_cache_of(source_a, source_b, options, forecast=fmt == "html")
    with work_folder() as work:
        # absolute: the notebook runs with its own folder as the working directory, where a relative
        # output_dir would name a folder inside itself (compare.json was lost with a relative -o)
        work_dir = Path(work).resolve()
        # the HTML page's worker gets ready while both sides are prepared (render/process.py); none where the
        # last run over the same files left its page in the page cache (its forecast), as for generate
        with NotebookProcess(work_dir, progress, in_process=expects_hit(page_cache, stamp)) if fmt == "html" \
                else contextlib.nullcontext() as maker:
            a = _side_spec("A", source_a, work_dir, options.a, progress, options.source, options.batch_a)
            b = _side_spec("B", source_b, work_dir, options.b, progress, options.source, options.batch_b)
            prices = str(Path(prices_file).resolve()) if prices_file else ""
            if fmt == "md":  # kept in the page cache as the HTML page is, under another key (its format)
                parameters = {"format": "md", "a": a, "b": b, "prices_file": prices, "output_dir": str(work_dir),
                              "standalone": True, "force": options.force}
                text = cached_page(lambda when: _markdown(a, b, prices, options.force, work_dir, when), parameters,
                                   work_dir, page_cache, progress, None, "compare.json", "comparison",
                                   "building the comparison").html
            else:
                parameters = {"a": a, "b": b, "prices_file": prices, "output_dir": str(work_dir),
                              "standalone": True, "force": options.force}
                text = cached_page(lambda when: maker.render(parameters, notebook=compare_notebook_path(),
                                                             generated_at=when),
                                   parameters, work_dir, page_cache, progress, stamp, "compare.json",
                                   "comparison").html
        produced = _produced_json(work_dir)
        regression = None
        if options.fail_on_regression is not None:
            regression = _gate(produced, options.fail_on_regression)
            if fmt == "md":  # the gate's verdict leads the pull-request comment, before the first section
                head, mark, rest = text.partition("\n### ")
                text = (head + "\n" + "\n".join(regression.markdown(options.allow_unjudged)) + "\n"
                        + mark.lstrip("\n") + rest)
        contents = {"-o": text}
        if json_path is not None:
            contents["--json"] = produced.read_text(encoding="utf-8")
        outputs.commit(contents)
    return CompareResult(output, json_path, len(text.encode("utf-8", "backslashreplace")), time.perf_counter() - started, regression)


def _page_cache_of(source_a: str, source_b: str, options: CompareOptions, forecast: bool = True):
    """The page cache of this run and its two sources' stamp (``render/page_cache.py``, as ``generate``'s page):
    none with ``--no-cache``. ``forecast`` False (the Markdown, made in this process: no worker to spare): no
    stamp."""
    if not options.source.trace_cache:
        return None, None
    from reportgen.render.page_cache import page_cache_for, sources_stamp

    cache = page_cache_for(options.source.cache_dir)
    stamp = sources_stamp([str(source_a), str(source_b)], repr(options), cache.memo) \
        if cache is not None and forecast else None
    return cache, stamp


def _markdown(a: dict, b: dict, prices: str, force: bool, work_dir: Path, when: str | None):
    """The comparison as Markdown (a ``render.html.Page`` holding it) with compare.json written into ``work_dir``,
    both saying ``when`` for their time (``page_cache.cached_page``'s placeholder; None: the time itself)."""
    from reportgen.compare.output import to_markdown
    from reportgen.compare.session import open_comparison
    from reportgen.render.html import Page
    from reportgen.render.page_cache import fixed_generation_time

    with fixed_generation_time(when):
        session = open_comparison(a, b, prices_file=prices, standalone=True, force=force)
        text = to_markdown(session.report, session.a.meta(), session.b.meta(), session.generated_at)
        session.save_json(work_dir)
    return Page(text)


def _gate(produced: Path, threshold: float) -> Regression:
    """The verdict section's step-time comparison (compare.json) judged against ``threshold``."""
    data = json.loads(produced.read_text(encoding="utf-8"))
    found = ((data.get("sections") or {}).get("verdict") or {}).get("regression")
    if not isinstance(found, dict):
        raise RenderError("the comparison wrote no regression check into compare.json")
    return Regression.from_data(found).with_threshold(threshold)


def _produced_json(work_dir: Path) -> Path:
    """compare.json as the comparison wrote it; checked before anything is written (both files or neither)."""
    produced = work_dir / "compare.json"
    if not produced.is_file():
        raise RenderError(f"the comparison did not write compare.json into {work_dir}")
    return produced
