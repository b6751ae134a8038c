"""``generate``: source -> rule outputs -> executed notebook -> one standalone HTML file.

Each stage lives in its own module; this one only wires them and keeps the run atomic:
everything is produced in a private work folder (``workdir``, outside the user's folders) and the
outputs are committed together at the end (``output_set``).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from reportgen.errors import InputError, RenderError
from reportgen.job_processes import children_idle, idle_to_script_end, process_changes, read_ticks
from reportgen.job_usage import usage_rows
from reportgen.thread_usage import busiest_threads, thread_rows
from reportgen.json_file import JsonFileError, read_json_file
from reportgen.json_values import is_finite
from reportgen.notebook_parameters import NotebookParameters
from reportgen.output_set import OutputSet, is_stdout
from reportgen.render.process import NotebookProcess
from reportgen.workdir import work_folder
from reportgen.sources.layout import local_job_name, traces_name, traces_named

Progress = Callable[[str], None]


@dataclass
class GenerateResult:
    html_path: Path
    json_path: Path
    html_bytes: int
    seconds: float
    rule_output_dir: Path | None  # where --rule-outputs kept them (None: they lived in the work folder only)
    used: str  # "rule outputs" or "raw data"
    notes: list[str] = field(default_factory=list)
    system_files: int | None = None  # raw data analysed: system files in the profile
    system_files_read: int | None = None  # ... of which parsed by this run (the rest from the --incremental cache)
    report: dict = field(default_factory=dict)  # report.json's content (for the CI outputs and --fail-on)
    written: list = field(default_factory=list)  # every output written, in order (``-``: standard output)


def silent(_: str) -> None:
    pass


def _download_progress(progress: Progress):
    """Turn the sources layer's snapshots into a line every second or so (bytes and files)."""
    state = {"last": 0.0}
    lock = threading.Lock()

    def report(snapshot) -> None:
        now = time.monotonic()
        with lock:
            done = snapshot.files_done == snapshot.files_total
            if not done and now - state["last"] < 1.0:
                return
            state["last"] = now
        progress(f"downloaded {snapshot.files_done}/{snapshot.files_total} files, "
                 f"{snapshot.bytes_done / 1e6:.1f}/{snapshot.bytes_total / 1e6:.1f} MB")
    return report


@dataclass(frozen=True)
class EngineOptions:
    """How the engine reads raw data: ``scheduler`` (``local[:N]`` / ``tcp://host:port``: system
    metrics reduced on Dask), ``cache_root`` (``--incremental``: records of unchanged files reused)."""

    scheduler: str | None = None
    cache_root: Path | None = None


@dataclass(frozen=True)
class SourceOptions:
    """How any source becomes rule outputs; the same for ``generate``, ``analyze`` and both sides of
    ``compare``. ``rule_params``: validated rule parameters (``--rule-param`` / ``--config``);
    ``session_kwargs``: for ``boto3.Session`` (``--profile``)."""

    cache_dir: Path | None = None
    recompute: bool = False
    rule_params: dict | None = None
    session_kwargs: dict | None = None
    engine: EngineOptions | None = None
    trace_cache: bool = True  # keep each trace file's reduction in <cache_dir>/traces (--no-cache: False)


@dataclass(frozen=True)
class CostOptions:
    """The instance a run's cost is computed for (default: from the job description) and the price table."""

    instance: str | None = None
    count: int | None = None
    region: str | None = None
    prices_file: Path | None = None


@dataclass(frozen=True)
class GenerateOptions:
    """Everything ``generate`` takes besides the source and the HTML path (the CLI builds one)."""

    source: SourceOptions = field(default_factory=SourceOptions)
    cost: CostOptions = field(default_factory=CostOptions)
    job_name: str = ""
    json_path: Path | None = None  # default: the HTML path with .json
    keep_notebook: Path | None = None  # also save the executed notebook here
    junit: Path | None = None  # also write the rules as JUnit XML here (``-``: standard output)
    markdown: Path | None = None  # also write the Markdown summary here (``-``: standard output)
    rule_outputs: Path | None = None  # also keep the rule outputs the report was made from, here
    debug: bool = False  # the page made in this process (breakpoint() works); a failing section fails the run


def check_engine_options(options: EngineOptions | None) -> None:
    """Fail before any work on a malformed --scheduler or a missing Dask (nothing imported from it)."""
    if options is not None and options.scheduler is not None:
        from reportgen.cluster.scheduler import check_dask_installed, parse_scheduler

        parse_scheduler(options.scheduler)
        check_dask_installed()


def _analyse_raw(raw_dir: Path, work_dir: Path, options: SourceOptions, progress: Progress, resolved=None,
                 stats: dict | None = None, client=None) -> Path:
    from reportgen.engine import AnalysisOptions, analyze

    engine, rule_params, session_kwargs = options.engine or EngineOptions(), options.rule_params, options.session_kwargs
    s3_system = s3_framework = None
    if engine.scheduler is not None and resolved is not None and resolved.system_objects is not None:
        from reportgen.cluster.s3_objects import S3System

        bucket, root, objects = resolved.system_objects
        s3_system = S3System(bucket, root, objects, region=resolved.region, session_kwargs=session_kwargs)
        progress(f"{len(objects)} system-metrics objects stay in s3://{bucket}/{root + '/' if root else ''}system/: "
                 "the Dask workers read them")
    if engine.scheduler is not None and resolved is not None and resolved.framework_objects and resolved.framework_objects[2]:
        from reportgen.cluster.s3_objects import S3System

        bucket, root, objects = resolved.framework_objects
        s3_framework = S3System(bucket, root, objects, region=resolved.region, session_kwargs=session_kwargs)
        progress(f"{len(objects)} framework traces stay in s3://{bucket}/{root + '/' if root else ''}framework/: "
                 "the Dask workers read them")
    where = f" on Dask ({engine.scheduler})" if engine.scheduler else ""
    progress(f"analysing raw profiler data in {raw_dir}{where}")
    result = analyze(raw_dir, work_dir / "analysis", AnalysisOptions(
        params=rule_params, scheduler=engine.scheduler, cache_root=engine.cache_root, s3_system=s3_system,
        s3_framework=s3_framework, client=client))
    if engine.cache_root is not None:
        progress(f"system metrics: {result.system_files_read} of {result.system_files} files read, "
                 f"the rest from the cache in {engine.cache_root}")
    if stats is not None:
        stats.update(system_files=result.system_files, system_files_read=result.system_files_read)
    if result.node_traces:
        from reportgen.trace_analysis.framework_account import write_framework_account

        write_framework_account(result.node_traces, result.report_dir.parent)
    return result.report_dir


@dataclass
class Prepared:
    resolved: object  # reportgen.sources.ResolvedSource
    rule_dir: Path
    used: str  # "rule outputs" or "raw data"


def prepare_rule_outputs(source: str, work_dir: Path, options: SourceOptions = SourceOptions(),
                         progress: Progress = silent, stats: dict | None = None) -> Prepared:
    """Any source -> a local folder of rule outputs (SageMaker's, or our engine's from raw data)."""
    from reportgen.sources import resolve_source

    engine, recompute, rule_params = options.engine, options.recompute, options.rule_params
    defer = engine is not None and engine.scheduler is not None
    resolved = resolve_source(str(source), cache_dir=options.cache_dir, recompute=recompute,
                              progress=_download_progress(progress), session_kwargs=options.session_kwargs,
                              **({"defer_system": True, "defer_traces": True} if defer else {}))
    progress(resolved.description)
    traces = tuple(resolved.trace_files or ()) or getattr(resolved, "trace_objects", None)
    if resolved.rule_output_dir is not None and not recompute:
        if rule_params is not None and not traces:
            raise InputError(_rule_params_unused(source, resolved.raw_available))
        if engine is not None and (engine.cache_root or (engine.scheduler and not traces)):
            progress("--scheduler/--incremental not used: the source has rule outputs, no raw data is analysed "
                     "(--recompute analyses the raw data)")
        if traces:
            from reportgen.trace_analysis.outputs import with_rule_outputs

            return Prepared(resolved, _add_trace_analysis(resolved, with_rule_outputs(resolved.rule_output_dir, work_dir / "analysis"),
                                                  options, progress)[0], f"rule outputs and {_traces_name(resolved)}")
        return Prepared(resolved, resolved.rule_output_dir, "rule outputs")
    if resolved.raw_dir is not None:
        engine_for_both = options.engine if traces else None
        with _shared_cluster(engine_for_both) as client:
            rule_dir = _analyse_raw(resolved.raw_dir, work_dir, options, progress, resolved, stats, client)
            _keep_recording(Path(resolved.raw_dir), rule_dir)
            if traces:
                return Prepared(resolved, _add_trace_analysis(resolved, rule_dir.parent, options, progress, client)[0],
                                f"raw data and {_traces_name(resolved)}")
        return Prepared(resolved, rule_dir, "raw data")
    if traces:
        report_dir, kineto = _add_trace_analysis(resolved, work_dir / "analysis", options, progress)
        _require_trace_events(source, report_dir.parent, kineto, _traces_name(resolved))
        return Prepared(resolved, report_dir, _traces_name(resolved))
    raise InputError(f"{source}: no rule outputs and no raw profiler data found")


def _keep_recording(raw_dir: Path, rule_dir: Path) -> None:
    """A `reportgen record` recording's summary (the command's own CPU and memory beside the host's) goes
    with the rule outputs, so the report can say whose CPU the system metrics show."""
    summary = raw_dir / "recording.json"
    if summary.is_file() and summary.stat().st_size < 10_000_000:
        shutil.copyfile(summary, rule_dir.parent / "recording.json")
        _add_process_changes(raw_dir, rule_dir.parent / "recording.json")


JOB_METRICS = "job-metrics.jsonl"  # recording.json's job_metrics_file, where recordings before it kept it


def _add_process_changes(raw_dir: Path, copy: Path) -> None:
    """The copy also keeps where the command's process count changed (job-metrics.jsonl, reduced by
    job_processes.process_changes): its children's start and end mark the training loop's ends, and where they
    went idle for good before ending (``children_idle``) the loop's end where they outlived it, as is where the
    command itself idled up to its script's end (``idle_to_script_end``); and the command's
    CPU and run-queue wait as a bounded cumulative series (job_usage.usage_rows), read over the loop's window, and
    its own process's main thread against its other threads where the recording split it (thread_usage)."""
    try:
        summary = read_json_file(copy)
    except (OSError, JsonFileError):
        return
    name = summary.get("job_metrics_file", JOB_METRICS) if isinstance(summary, dict) else None
    if not isinstance(name, str) or Path(name).name != name:  # a bare file name beside recording.json, or none
        return
    ticks = read_ticks(raw_dir / name)
    changes, usage = process_changes(raw_dir / name, ticks), usage_rows(ticks)
    idle = children_idle(raw_dir / name, ticks)
    if idle:
        summary["children_idle"] = idle
    script_end = summary.get("script_end_s")
    quiet = idle_to_script_end(ticks, float(script_end)) if is_finite(script_end) else []
    if quiet:
        summary["idle_to_script_end"] = quiet
    if changes:
        summary["process_changes"] = changes
    if usage:
        summary["job_usage"] = usage
    threads = thread_rows(ticks)
    if threads:
        summary["thread_usage"] = threads
        summary["busiest_threads"] = busiest_threads(ticks)
    if changes or usage or idle or quiet or threads:
        copy.write_text(json.dumps(summary, indent=1), encoding="utf-8")


@contextlib.contextmanager
def _shared_cluster(engine: EngineOptions | None):
    """One Dask client for the engine and the PyTorch traces of one run: a ``local:N`` cluster starts once, not
    once per reader (3.5 s instead of 4.2 s for a small job with both, idle 2-core VM); None without a
    scheduler, and for a single reader, which starts its own."""
    if engine is None or engine.scheduler is None:
        yield None
        return
    from reportgen.cluster.client import dask_client
    from reportgen.cluster.scheduler import parse_scheduler

    with dask_client(parse_scheduler(engine.scheduler)) as client:
        yield client


def _rule_params_unused(source, raw_available: bool) -> str:
    """--rule-param/--config would be silently ignored on SageMaker's own rule outputs: refuse, naming the fix."""
    if raw_available:
        return (f"--rule-param/--config change how the rules run, but {source} has rule outputs, which are "
                "shown as they are: add --recompute to run the rules on its raw data with them")
    return (f"--rule-param/--config change how the rules run, but {source} has only rule outputs "
            "(no raw profiler data to run the rules on, as --recompute would)")


def _check_cost_options(cost: CostOptions) -> None:
    from reportgen.cost import load_prices

    if cost.count is not None and cost.count < 1:
        raise InputError("--count must be at least 1")
    load_prices(cost.prices_file)  # a bad prices file fails before any work


def _cost_parameter(resolved, cost: CostOptions) -> dict:
    """What the notebook needs for the cost section; empty (no section) when the instance is unknown."""
    instance, count, region, prices_file = cost.instance, cost.count, cost.region, cost.prices_file
    instance_type = instance or resolved.instance_type
    if not instance_type:
        return {}
    return {"instance_type": instance_type, "instance_count": count or resolved.instance_count or 1,
            "region": region or resolved.region, "prices_file": str(Path(prices_file).resolve()) if prices_file else None,
            "instance_from": "command line" if instance else "job description"}


def _traces_name(resolved) -> str:
    """What the source's traces are called ("JAX / TensorFlow profiler traces" for XSpace files), from their
    local paths or, left in S3 for the workers, their keys."""
    objects = getattr(resolved, "trace_objects", None)
    keys = [o[0] for o in objects[1]] if objects else []
    return traces_name([str(f) for f in resolved.trace_files or ()] or keys)


def _require_trace_events(source, analysis_dir: Path, kineto: dict, traces: str) -> None:
    """A source of profiler traces only, none of which holds a usable event, is no report (exit 2), as
    raw SageMaker data in the same state is: it made an empty report with exit 0. ``kineto``: the kineto.json
    document just written (not read back: 0.1-0.2 CPU s of a warm run over 64 ranks); ``traces``: what they are
    called ("JAX / TensorFlow profiler traces": a damaged XSpace file was called a PyTorch trace)."""
    ranks = (kineto.get("ranks") or {}).values()
    if any(isinstance(rank, dict) and rank.get("events") for rank in ranks):
        return
    quality = analysis_dir / "data-quality.json"
    reasons = (read_json_file(quality).get("by_reason") or {}) if quality.is_file() else {}
    why = "; ".join(f"{reason} ×{count}" for reason, count in reasons.items())
    raise InputError(f"no usable profiler data in {source}: none of the {traces} holds a complete event"
                     + (f" ({why})" if why else ""))


def _add_trace_analysis(resolved, analysis_dir: Path, options: SourceOptions, progress: Progress,
                        client=None) -> tuple[Path, dict]:
    """The traces -> kineto.json & co. in ``analysis_dir``: rank after rank here, or one Dask task per
    rank with ``--scheduler`` (traces left in S3 are fetched by the workers). Returns the rule outputs' folder and
    the kineto.json document."""
    from reportgen.readers.trace_cache import trace_cache_for
    from reportgen.trace_analysis.outputs import write_kineto_document

    scheduler = (options.engine or EngineOptions()).scheduler
    files, s3 = list(resolved.trace_files or ()), None
    deferred = getattr(resolved, "trace_objects", None)
    if deferred is not None:
        from reportgen.cluster.s3_objects import S3System

        bucket, objects = deferred
        s3 = S3System(bucket, "", objects, region=resolved.region, session_kwargs=options.session_kwargs)
        files = [key for key, _, _ in objects]
        progress(f"{len(files)} PyTorch profiler trace objects stay in s3://{bucket}/: the Dask workers read them")
    where = f" on Dask ({scheduler}, one task per rank)" if scheduler else ""
    progress(f"analysing {len(files)} {traces_named(files)} trace file(s){where}")
    stats: list = []
    cache = trace_cache_for(options.cache_dir, progress) if options.trace_cache else None
    report_dir, doc = write_kineto_document(files, analysis_dir, params=options.rule_params, scheduler=scheduler,
                                            s3=s3, stats=stats, client=client, cache=cache)
    if scheduler and files and not stats:
        progress("PyTorch profiler traces: every rank served from the trace cache, no Dask cluster started")
    elif scheduler and stats:
        peak = max(s.peak_rss for s in stats) / 1e6
        progress(f"PyTorch profiler traces: {len(stats)} task(s) on {len({s.worker_pid for s in stats})} worker "
                 f"process(es), {sum(s.bytes for s in stats) / 1e6:.1f} MB read there, largest worker peak "
                 f"{peak:.0f} MB")
    return report_dir, doc


def page_cache_of(source: str, options: GenerateOptions):
    """The page cache of this run and its source's stamp (``render/page_cache.py``): none with ``--no-cache``,
    ``--keep-notebook`` (the executed notebook is asked for) nor ``--debug``."""
    if not options.source.trace_cache or options.keep_notebook or options.debug:
        return None, None
    from reportgen.render.page_cache import page_cache_for, source_stamp

    cache = page_cache_for(options.source.cache_dir)
    settings = repr((options.source, options.cost, options.job_name))
    return cache, source_stamp(str(source), settings, cache.memo) if cache is not None else None


def generate(source: str, output: Path, options: GenerateOptions = GenerateOptions(),
             progress: Progress = silent) -> GenerateResult:
    """Make the report and commit every output together (``output_set``): the HTML, report.json and,
    when asked, the JUnit XML, the Markdown summary and the executed notebook. Every path is checked
    before any work; on any failure none of them is replaced. ``-`` is standard output.
    ``options.rule_outputs``: the rule outputs are also kept in that folder (copied beside it before the
    commit, swapped in whole after it; a failed commit leaves the folder as it was)."""
    started = time.perf_counter()
    output = output if is_stdout(output) else Path(output)
    json_path, junit, markdown = options.json_path, options.junit, options.markdown
    outputs = OutputSet()
    html_target = outputs.add("-o", output)
    if json_path is None and html_target.kind != "file":  # no "<device>.json" or "-.json" beside it
        raise InputError(f"-o {html_target}: not a regular file, so there is no place for report.json beside it; "
                         "give --json PATH as well")
    json_path = json_path if is_stdout(json_path) else Path(json_path) if json_path else output.with_suffix(".json")
    outputs.add("--json", json_path)
    for role, path in (("--junit", junit), ("--markdown", markdown), ("--keep-notebook", options.keep_notebook)):
        if path:
            outputs.add(role, path)
    check_engine_options(options.source.engine)
    if options.rule_outputs is not None:
        outputs.add_folder("--rule-outputs", Path(options.rule_outputs), whole=True)
        outputs.keep_out_of("--rule-outputs", Path(options.rule_outputs))
        from reportgen.rule_outputs import check_rule_output_folder

        check_rule_output_folder(Path(options.rule_outputs))
    stats: dict = {}
    cost = options.cost
    if cost.prices_file or cost.instance or cost.count is not None:
        _check_cost_options(cost)
    with work_folder() as work_dir:
        # gets ready to make the page while the engine runs (render/process.py); --debug: made in this process.
        # No worker either where the last run over the same files left its page in the page cache (its forecast):
        # the page is served, or, should it be missing after all, made in this process.
        page_cache, stamp = page_cache_of(source, options)
        from reportgen.render.page_cache import cached_page, expects_hit

        maker = NotebookProcess(work_dir, progress, in_process=options.debug or expects_hit(page_cache, stamp),
                                template_folder=page_cache.folder if page_cache is not None else None)
        try:
            prepared = prepare_rule_outputs(source, work_dir, options.source, progress, stats)
            resolved, rule_dir, used = prepared.resolved, prepared.rule_dir, prepared.used
            notes = list(resolved.notes)
            progress(f"rule outputs from the {used}")
            description = f"{resolved.description} — report made from the {used}"
            if used == "rule outputs" and resolved.raw_available:
                description += " (raw profiler data is also available: --recompute analyses it with reportgen's engine)"
            if resolved.incomplete:
                notes.insert(0, "The job was still running: this report covers the data written so far.")
            # The notebook reads the rule outputs (once; an unreadable one is an InputError) and writes
            # report.json into the work folder; a re-run over the same ones takes both from the page cache.
            parameters = NotebookParameters(
                source=str(rule_dir.resolve()), output_dir=str(work_dir.resolve()),
                job_name=options.job_name or resolved.job_name or local_job_name(source), standalone=True,
                notes=notes, description=description, incomplete=resolved.incomplete, source_label=str(source),
                cost=_cost_parameter(resolved, cost), debug=options.debug)
            papermill, keep = parameters.to_papermill(), bool(options.keep_notebook)
            page = cached_page(lambda when: maker.render(papermill, keep_notebook=keep, generated_at=when),
                               papermill, work_dir, page_cache, progress, stamp)
        finally:
            maker.close()
        html = page.html
        produced_json = work_dir / "report.json"
        if not produced_json.is_file():  # checked before anything is written: all outputs or none
            raise RenderError(f"the analysis notebook did not write report.json into {work_dir}")
        json_text = produced_json.read_text(encoding="utf-8")
        data = json.loads(json_text)
        contents: dict = {"-o": html, "--json": json_text}
        if junit:
            from reportgen.ci_outputs import junit_xml  # imported only when asked: not on the engine's way

            contents["--junit"] = junit_xml(data)
        if markdown:
            from reportgen.ci_outputs import markdown_summary

            contents["--markdown"] = markdown_summary(data)
        if options.keep_notebook:
            contents["--keep-notebook"] = page.notebook
        kept = staged = None
        if options.rule_outputs is not None:
            kept = Path(options.rule_outputs)
            from reportgen.rule_outputs import StagedRuleOutputs

            staged = StagedRuleOutputs(rule_dir, kept)  # copied beside it now, swapped in after the commit
        # One commit: two runs writing the same report leave one run's complete set (folder locks),
        # a full disk or a bad target leaves every old output as it was (the staged rule outputs too).
        try:
            written = outputs.commit(contents)
        except BaseException:
            if staged is not None:
                staged.discard()
            raise
        if staged is not None:
            staged.swap_in()
            progress(f"rule outputs kept in {kept}")
    seconds = time.perf_counter() - started
    return GenerateResult(output, json_path, len(html.encode("utf-8", "backslashreplace")), seconds, kept, used, notes,
                          stats.get("system_files"), stats.get("system_files_read"), data,
                          [t.path for t in written])


def analyze(source: str, out_dir: Path, options: SourceOptions = SourceOptions(),
            progress: Progress = silent) -> Path:
    """``reportgen analyze``: only the engine, raw data (or PyTorch traces) -> the rule outputs in ``out_dir``
    (see ``export_rule_outputs``); nothing is rendered."""
    out_dir = Path(out_dir)
    check_engine_options(options.engine)
    from reportgen.rule_outputs import check_rule_output_folder, export_rule_outputs

    OutputSet().add_folder("-o", out_dir, whole=True)  # never an input, nor in or around one
    check_rule_output_folder(out_dir)
    with work_folder() as work_dir:
        prepared = prepare_rule_outputs(source, work_dir, replace(options, recompute=True), progress)
        export_rule_outputs(prepared.rule_dir, out_dir)
    return out_dir
