"""Analysis engine: raw profiler data -> the 11 rule outputs in SageMaker's JSON schema.

``analyze(raw_root, out_dir)`` reads the system metrics and framework traces, runs every rule and
writes ``profiler-reports/<Rule>.json``, ``data-quality.json`` and ``timeline.json``.

The readers (and pandas with them) are imported when first used, not with this package: the
system-metrics read then starts right away and pandas is imported beside it (see ``_read_both``).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from reportgen.engine.params import RuleParams, default_params, load_config, parse_overrides
from reportgen.problems import DataProblem, ProblemLog
from reportgen.engine.rules import rule_module
from reportgen.atomic import write_text_atomic
from reportgen.errors import InputError
from reportgen.rulebook import RULE_ORDER, RULES

__all__ = [
    "AnalysisOptions", "AnalysisResult", "DataProblem", "analyze", "load_data", "run_rules",
    "parse_overrides", "load_config", "default_params",
]


@dataclass
class AnalysisResult:
    rules: dict[str, dict]  # rule name -> the rule JSON dict
    problems: ProblemLog
    report_dir: Path  # out_dir / "profiler-reports"
    rule_paths: dict[str, Path]
    data_quality_path: Path
    timeline_path: Path
    nodes: list[str] = field(default_factory=list)
    n_events: int = 0
    system_files: int = 0  # system files in the profile
    system_files_read: int = 0  # of which parsed by this run (the rest came from the --incremental cache)


@dataclass(frozen=True)
class AnalysisOptions:
    """How ``analyze`` reads and judges a raw profile, passed whole (the pipeline makes one from its
    ``SourceOptions``): ``params``, validated rule parameters; ``scheduler``, ``cache_root``, ``s3_system``,
    ``s3_framework``: see :func:`load_data`; ``client``: a ``dask.distributed.Client`` you hold, used instead of
    starting a cluster for ``scheduler``."""

    params: dict[str, RuleParams] | None = None
    scheduler: str | None = None
    cache_root: Path | None = None
    s3_system: object = None
    s3_framework: object = None
    client: object = None


def write_json_atomic(path: Path, obj) -> None:
    """``json.dump`` with default separators (SageMaker's format), written atomically."""
    write_text_atomic(path, json.dumps(obj))


def load_data(raw_root: Path, problems: ProblemLog | None = None, *, scheduler: str | None = None,
              cache_root: Path | None = None, s3_system=None, s3_framework=None) -> tuple[AnalysisData, ProblemLog]:
    """Read a raw profile. ``scheduler`` (``local[:N]`` or ``tcp://host:port``) reads the system
    metrics and the framework traces on a Dask cluster, ``cache_root`` reuses the records of
    unchanged system files (``--incremental``), ``s3_system`` / ``s3_framework`` (``distributed.S3System``)
    let the Dask workers fetch the system files / the framework traces from S3 themselves. See
    docs/distributed.md."""
    data, problems, _ = _load(raw_root, problems, scheduler, cache_root, s3_system, s3_framework)
    return data, problems


def summarize_trace_file(fe, span=None):
    """``framework_events.summarize_file``, imported where it first runs: in the traces thread (or on a Dask
    worker), so that pandas is imported there while DuckDB reads the system metrics, not before."""
    from reportgen.engine.framework_events import summarize_file

    return summarize_file(fe, span)


def merge_trace_summaries(summaries, problems):
    """``framework_events.merge_summaries``, imported where it runs (the traces thread, see above)."""
    from reportgen.engine.framework_events import merge_summaries

    return merge_summaries(summaries, problems)


def _load(raw_root, problems, scheduler, cache_root, s3_system, s3_framework=None, client=None):
    from reportgen.readers.ingest import TraceReduction, read_profile

    raw_root = Path(raw_root)
    problems = problems or ProblemLog()
    # The framework traces are reduced file by file (here, or on the Dask workers) to what the rules
    # read, and merged exactly: the client never holds the whole event table (engine.framework_events).
    profile = read_profile(raw_root, problems, scheduler=scheduler, cache_root=cache_root, s3_system=s3_system,
                           s3_framework=s3_framework,
                           traces=TraceReduction(summarize_trace_file, merge_trace_summaries), client=client)
    from reportgen.engine.model import MAX_GPU_SERIES_PER_NODE, AnalysisData, gpu_series_note, time_axis

    system, fw = profile.system, profile.events
    try:
        if not system.nodes and fw.n_events == 0:
            raise InputError(f"no usable profiler data under {raw_root} (no readable system metrics or framework "
                             "traces)")
        t0, n_windows = time_axis(system.nodes, fw, profile.first_key_us)
        data = AnalysisData(nodes=system.nodes, events=fw.rows, t0_us=t0, n_windows=n_windows, framework=fw)
        for node, n in gpu_series_note(system.nodes):
            problems.add(f"node {node}", None, f"more than {MAX_GPU_SERIES_PER_NODE} GPU series on one node "
                         f"(LoadBalancing and the timeline use the first {MAX_GPU_SERIES_PER_NODE} only)", count=n - MAX_GPU_SERIES_PER_NODE)
    except BaseException:  # an input error or an interrupt: the spilled correlation columns go now
        fw.close()
        raise
    return data, problems, system


RULE_THREADS = 2  # the rules are pure functions of read-only data; numpy lets two run at once
# With two threads the rules run in two lanes: those that build big temporaries from the event table
# (up to ~210 MB each on the large benchmark profile) one after another in one lane, followed by the
# timeline (in ``analyze``), the system-table rules in the other (each rule's lane is in the rulebook), so the peak memory stays that of
# one heavy rule per lane. Large profile, one thread: event rules ~1.25 s + timeline ~0.9 s against
# ~2.3 s of system rules, so the two lanes end together. Where the command line may fork, the system lane
# runs in a forked child instead of a thread (``_fork_lane``): the lanes' Python no longer takes turns.


def run_rules(data: AnalysisData, params: dict[str, RuleParams] | None = None,
              progress: Callable[[str], None] | None = None, threads: int = RULE_THREADS) -> dict[str, dict]:
    """All 11 rules; the result is ordered as ``RULE_ORDER``. With ``threads`` > 1 they run in two
    lanes side by side (their big array operations release the GIL: 4.0-4.8 -> 2.3-2.8 s on the
    large benchmark profile); the results are the same."""
    rules, _, _ = _evaluate(data, params, progress, threads, timeline=False)
    return rules


def _evaluate(data, params, progress, threads: int, timeline: bool,
              encode: bool = False) -> tuple[dict[str, dict], dict | None, dict[str, str]]:
    """The rules (and the timeline document when asked), sequentially or in two lanes; ``encode``: each
    document's JSON text too (key ``"timeline"`` for the timeline's), made in its lane as it is done, so
    the encoding (~0.1 s on the medium profile, the timeline's 1.2 MB most of it) runs beside the other
    lane instead of after both."""
    params = {**default_params(), **(params or {})}
    out: dict[str, dict] = {}
    texts: dict[str, str] = {}

    def lane(names: list[str], with_timeline: bool):
        for name in names:
            if progress and threads <= 1:
                progress(f"rule {name}")
            out[name] = rule_module(name).evaluate(data, params[name])
            if encode:
                texts[name] = json.dumps(out[name])
        if with_timeline:
            from reportgen.engine.timeline import build_timeline

            doc = build_timeline(data.nodes, data.events, extent_us=data.framework.extent)
            if encode:
                texts["timeline"] = json.dumps(doc)
            return doc
        return None

    if threads <= 1:
        doc = lane(list(RULE_ORDER), timeline)
    else:
        from concurrent.futures import ThreadPoolExecutor

        if progress:
            progress(f"running the {len(RULE_ORDER)} rules (2 threads)")
        events = [rule.name for rule in RULES if rule.lane == "events"]
        system = [rule.name for rule in RULES if rule.lane != "events"]
        with contextlib.ExitStack() as stack:  # the child is closed on the way out, whatever ends the lanes
            forked = _fork_lane(data, params, system, encode, stack)
            if forked is not None:
                doc = lane(events, timeline)
                found, encoded = forked.result(lambda: _lane_here(lane, system, out, texts))
                out.update(found)
                texts.update(encoded)
                return {name: out[name] for name in RULE_ORDER}, doc, texts
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reportgen-rules")
        try:
            first = pool.submit(lane, events, timeline)
            lane(system, False)
            doc = first.result()
        except BaseException:
            # a stop signal (or an error) in this thread: do not wait for the other lane to finish its
            # rule (it only computes in memory; the command line then leaves with os._exit)
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
    return {name: out[name] for name in RULE_ORDER}, doc, texts


def _fork_lane(data, params, names: list[str], encode: bool, stack):
    """The rules ``names`` evaluated in a forked child (``readers.forked_call``), which sees ``data`` as this
    process holds it (nothing is sent but the results); None where no fork is allowed. The rules' two lanes
    hold the GIL for most of their ~0.5 CPU s (medium profile): as two threads they ran one at a time."""
    from reportgen.readers.forked_call import start

    return start(_lane_in_child, data, params, names, encode, stack=stack)


def _lane_in_child(notice, data, params, names: list[str], encode: bool):
    """The child's work: each rule's document (and its JSON text with ``encode``)."""
    docs = {name: rule_module(name).evaluate(data, params[name]) for name in names}
    return docs, ({name: json.dumps(doc) for name, doc in docs.items()} if encode else {})


def _lane_here(lane, names: list[str], out: dict, texts: dict) -> tuple[dict, dict]:
    """``_lane_in_child``'s result computed by ``lane`` in this process (the child ended without answering)."""
    lane(names, False)
    return {name: out[name] for name in names}, {name: texts[name] for name in names if name in texts}


def analyze(raw_root: Path, out_dir: Path, options: AnalysisOptions | None = None, *,
            progress: Callable[[str], None] | None = None, **fields) -> AnalysisResult:
    """Read ``raw_root``, run all rules, write the rule JSONs, data-quality.json and timeline.json.

    ``options``: an ``AnalysisOptions``; or its fields as keywords (``analyze(raw, out, scheduler=...)``), not both."""
    if options is None:
        options = AnalysisOptions(**fields)  # an unknown keyword is a TypeError, as it was
    elif fields:
        raise TypeError(f"analyze: give options or its fields as keywords, not both ({', '.join(fields)})")
    out_dir = Path(out_dir)
    if progress:
        progress("reading raw profiler data")
    data, problems, system = _load(Path(raw_root), None, options.scheduler, options.cache_root, options.s3_system,
                                   options.s3_framework, options.client)
    try:
        rules, _, texts = _evaluate(data, options.params, progress, RULE_THREADS, timeline=True, encode=True)
    finally:
        data.framework.close()  # the spilled correlation columns (engine.framework_events)
    report_dir = out_dir / "profiler-reports"
    paths = {}
    for name in rules:
        paths[name] = report_dir / f"{name}.json"
        write_text_atomic(paths[name], texts[name])  # json.dumps of the rule's document, made in its lane
    if progress:
        progress("writing timeline")
    dq = out_dir / "data-quality.json"
    write_json_atomic(dq, problems.to_json())
    tl = out_dir / "timeline.json"
    write_text_atomic(tl, texts["timeline"])  # json.dumps of the timeline document
    return AnalysisResult(rules=rules, problems=problems, report_dir=report_dir, rule_paths=paths,
                          data_quality_path=dq, timeline_path=tl, nodes=list(data.nodes), n_events=data.framework.n_events,
                          system_files=system.files, system_files_read=system.files_read)
