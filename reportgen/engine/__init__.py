"""Analysis engine: raw profiler data -> the 11 rule outputs in SageMaker's JSON schema.

``analyze(raw_root, out_dir)`` reads the system metrics and framework traces, runs every rule and
writes ``profiler-reports/<Rule>.json``, ``data-quality.json`` and ``timeline.json``.

The readers (and pandas with them) are imported when first used, not with this package: the
system-metrics read then starts right away and pandas is imported beside it (see ``_read_both``).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from reportgen.engine.params import RuleParams, default_params, load_config, parse_overrides
from reportgen.problems import DataProblem, ProblemLog
from reportgen.garbage_collector import freeze_long_lived_objects
from reportgen.readers.heap import reuse_freed_heap
from reportgen.engine.rules import rule_module
from reportgen.atomic import write_text_atomic
from reportgen.errors import InputError
from reportgen.rulebook import RULE_ORDER, RULES, RuleName

if TYPE_CHECKING:  # pragma: no cover - the annotations' type only: the model (pandas) loads on first use
    from reportgen.engine.model import AnalysisData

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
    # each training process's framework events as the one trace model, with its steps (engine.framework_trace):
    # the step-time account's input (trace_analysis.framework_account)
    node_traces: list = field(default_factory=list)


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
    unchanged system files (``--incremental``), ``s3_system`` / ``s3_framework`` (``cluster.s3_objects.S3System``)
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
# ~2.3 s of system rules, so the two lanes end together. Where the command line may fork, the work is
# shared with a forked child instead of a thread (``_fork_shared``): the lanes' Python no longer takes turns.
# The events lane stays in this process, one rule after another; the timeline and the system rules are a
# pool that the child starts on and this process joins when its events lane is done, each taking the next
# task as it is free (medium profile, one thread: events lane ~0.24 CPU s, timeline ~0.22, system rules
# ~0.32: as fixed lanes this process's 0.46 s against the child's 0.32 s).
SHARED_FIRST = ("timeline", RuleName.OVERALL_SYSTEM_USAGE, RuleName.BATCH_SIZE)  # the pool's longest tasks, taken first


def run_rules(data: AnalysisData, params: dict[str, RuleParams] | None = None,
              progress: Callable[[str], None] | None = None, threads: int = RULE_THREADS) -> dict[str, dict]:
    """All 11 rules; the result is ordered as ``RULE_ORDER``. With ``threads`` > 1 they run in two
    lanes side by side (their big array operations release the GIL: 4.0-4.8 -> 2.3-2.8 s on the
    large benchmark profile); the results are the same."""
    rules, _ = _evaluate(data, params, progress, threads, timeline=False)
    return rules


def _evaluate(data, params, progress, threads: int, timeline: bool,
              encode: bool = False) -> tuple[dict[str, dict], dict[str, str]]:
    """The rules' documents, sequentially or in two lanes, and texts: with ``encode`` each document's JSON
    text, made in its lane as it is done, so the encoding (~0.1 s on the medium profile, the timeline's
    1.2 MB most of it) runs beside the other lane instead of after both; with ``timeline`` the timeline
    document's JSON text (key ``"timeline"``)."""
    params = {**default_params(), **(params or {})}
    out: dict[str, dict] = {}
    texts: dict[str, str] = {}
    reuse_freed_heap()  # the rules' temporaries kept mapped between uses, in the command line's process (readers.heap)
    freeze_long_lived_objects()  # the profile's data out of the collector's scans, where the imports are frozen

    def task(name: str) -> None:
        if progress and threads <= 1 and name != "timeline":
            progress(f"rule {name}")
        _run_task(name, data, params, encode, out, texts)

    def lane(names: list[str]) -> None:
        for name in names:
            task(name)

    if threads <= 1:
        lane(list(RULE_ORDER) + (["timeline"] if timeline else []))
        return {name: out[name] for name in RULE_ORDER}, texts
    if progress:
        progress(f"running the {len(RULE_ORDER)} rules (2 threads)")
    events = [rule.name for rule in RULES if rule.lane == "events"]
    system = [rule.name for rule in RULES if rule.lane != "events"]
    with contextlib.ExitStack() as stack:  # the child is closed on the way out, whatever ends the lanes
        pool = sorted((["timeline"] if timeline else []) + system,
                      key=lambda name: SHARED_FIRST.index(name) if name in SHARED_FIRST else len(SHARED_FIRST))
        shared = _fork_shared(data, params, pool, encode, stack)
        if shared is not None:
            forked, take = shared
            lane(events)
            while (name := take()) is not None:  # then the pool's tasks that the child has not taken
                task(name)
            # what the child took and did not answer (it died), computed here
            found, encoded = forked.result(lambda: _here(lane, [n for n in pool if n not in out and n not in texts],
                                                         out, texts))
            out.update(found)
            texts.update(encoded)
            return {name: out[name] for name in RULE_ORDER}, texts
    from concurrent.futures import ThreadPoolExecutor

    pool_threads = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reportgen-rules")
    try:
        first = pool_threads.submit(lane, events + (["timeline"] if timeline else []))
        lane(system)
        first.result()
    except BaseException:
        # a stop signal (or an error) in this thread: do not wait for the other lane to finish its
        # rule (it only computes in memory; the command line then leaves with os._exit)
        pool_threads.shutdown(wait=False, cancel_futures=True)
        raise
    pool_threads.shutdown(wait=True)
    return {name: out[name] for name in RULE_ORDER}, texts


def _run_task(name: str, data, params, encode: bool, docs: dict, texts: dict) -> None:
    """One task of the rules' work: a rule's document into ``docs`` (and its JSON text into ``texts`` with
    ``encode``), or, for ``"timeline"``, the timeline's JSON text into ``texts``."""
    if name == "timeline":
        texts["timeline"] = _timeline_text(data)
        return
    docs[name] = rule_module(name).evaluate(data, params[name])
    if encode:
        texts[name] = json.dumps(docs[name])


def _timeline_text(data) -> str:
    """The timeline document's JSON text (``engine.timeline``)."""
    from reportgen.engine.timeline import build_timeline

    return json.dumps(build_timeline(data.nodes, data.events, extent_us=data.framework.extent))


def _fork_shared(data, params, pool: list[str], encode: bool, stack):
    """A forked child (``readers.forked_call``) taking tasks from ``pool`` (rule names, ``"timeline"``) one at a
    time, and ``take()``, which gives this process the next task that neither has taken (None once all are):
    ``(ForkedCall, take)``, or None where no fork is allowed. The tasks are bytes in a pipe written whole
    before the fork; a one-byte read from a pipe is atomic, so each task goes to exactly one of the two. The
    child sees ``data`` as this process holds it (nothing is sent but the results). The rules hold the GIL
    for most of their ~0.8 CPU s (medium profile): as two threads they ran one at a time."""
    from reportgen.readers.forked_call import can_fork, start

    if not can_fork():
        return None
    read_end, write_end = os.pipe()
    stack.callback(os.close, read_end)
    with os.fdopen(write_end, "wb") as tokens:
        tokens.write(bytes(range(len(pool))))  # a few bytes: far below the pipe's buffer
    forked = start(_pool_in_child, data, params, pool, encode, read_end, stack=stack)
    if forked is None:
        return None

    def take() -> str | None:
        token = os.read(read_end, 1)
        return pool[token[0]] if token else None

    return forked, take


def _pool_in_child(notice, data, params, pool: list[str], encode: bool, read_end: int):
    """The child's work: the pool's tasks it takes, as documents (rules) and JSON texts."""
    docs: dict = {}
    texts: dict = {}
    while token := os.read(read_end, 1):
        _run_task(pool[token[0]], data, params, encode, docs, texts)
    return docs, texts


def _here(lane, names: list[str], out: dict, texts: dict) -> tuple[dict, dict]:
    """What the child took and did not answer (it ended without a result), computed by ``lane`` here."""
    lane(names)
    return ({name: out[name] for name in names if name in out},
            {name: texts[name] for name in names if name in texts})


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
        rules, texts = _evaluate(data, options.params, progress, RULE_THREADS, timeline=True, encode=True)
        traces = _node_traces(data)
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
                          system_files=system.files, system_files_read=system.files_read, node_traces=traces)


def _node_traces(data) -> list:
    """Each training process's framework events as trace columns with its steps (none without training steps)."""
    from reportgen.engine.framework_trace import node_traces

    fw = data.framework
    if not fw.n_events or not len(fw.rows):
        return []
    return node_traces(fw.node_events(), fw.rows)
