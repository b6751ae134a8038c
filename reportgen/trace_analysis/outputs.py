"""Kineto traces -> what the report reads: ``kineto.json`` next to ``profiler-reports/``, a
StepOutlier rule output in SageMaker's schema, the traces' data problems in ``data-quality.json``
and, when system metrics were analysed too, the steps as phases in ``timeline.json``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from reportgen.atomic import write_text_atomic
from reportgen.engine.params import StepOutlierParams
from reportgen.problems import ProblemLog
from reportgen.engine.stats import hist100
from reportgen.trace_analysis.job import analyze_traces

KINETO_JSON = "kineto.json"
STEP_PHASE = "ProfilerStep"
_EPOCH_US_2001 = 1e15


def analyze_job(files: list[Path], problems: ProblemLog | None = None, *, scheduler: str | None = None,
                s3=None, client=None, cache=None) -> tuple[dict, ProblemLog]:
    """The ``kineto.json`` document of a job's trace files, rank by rank (``reportgen.trace_analysis.job``:
    ``scheduler`` runs one task per rank on Dask, ``client`` on a Dask client you hold; ``s3``: the files
    are keys the workers fetch; ``cache``: a ``readers.trace_cache.TraceCache`` of the files' reductions)."""
    return analyze_traces(files, problems, scheduler=scheduler, s3=s3, client=client, cache=cache)


def step_outlier_rule(doc: dict, params: StepOutlierParams | None = None) -> dict:
    """StepOutlier in SageMaker's schema from the ranks' ProfilerStep durations (seconds).

    Unlike the SageMaker rule, no minimum of 100 steps is required: a profiler trace usually holds
    a handful of steps, and their statistics are still worth showing.
    """
    p = params or StepOutlierParams()
    details: dict = {"step_details": {}}
    triggered = violations = datapoints = 0
    for label, rank in doc.get("ranks", {}).items():
        durations = np.array([s["dur_ms"] / 1000.0 for s in rank.get("steps", [])])
        if durations.size == 0:
            continue
        datapoints += int(durations.size)
        threshold = float(durations.mean() + p.stddev * durations.std())
        outliers = durations > threshold
        if int(outliers.sum()) > p.n_outliers:
            triggered += 1
            violations += int(outliers.sum())
        probs, edges = hist100(durations[~outliers] if (~outliers).any() else durations)
        p99, p95, p50 = np.percentile(durations, [99, 95, 50])
        details["step_details"][f"rank-{label}"] = {
            "step_stats": {"mean": float(durations.mean()), "max": float(durations.max()), "p99": float(p99),
                           "p95": float(p95), "p50": float(p50), "min": float(durations.min())},
            "number_of_outliers": int(outliers.sum()),
            "steps": int(durations.size),  # lets a reader tell that a rank with <= n_outliers steps cannot fire
            "phase": STEP_PHASE,
            "stddev": round(float(durations.std()), 2),
            "probs": probs,
            "binedges": edges,
            "step_numbers": [str(s["step"]) for s, out in zip(rank["steps"], outliers) if out],
            "outliers": _outliers(rank, outliers),
        }
    return {"RuleTriggered": triggered, "Violations": violations, "Details": details, "Datapoints": datapoints,
            "RuleParameters": p.rule_parameters()}


def _outliers(rank: dict, flags) -> list[dict]:
    """Each outlier step with its start (epoch s, when the trace has epoch timestamps) and duration (s),
    the slowest first (as the engine's StepOutlier lists them)."""
    start = rank.get("start_us", 0.0) or 0.0
    listed = []
    for step, out in zip(rank.get("steps", []), flags):
        if out:
            at = (start / 1000.0 + step["start_ms"]) / 1000.0 if start >= _EPOCH_US_2001 else None
            listed.append({"step": str(step["step"]), "start_s": at, "duration_s": step["dur_ms"] / 1000.0})
    return sorted(listed, key=lambda o: -o["duration_s"])[:200]


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _merge_step_outlier(existing: dict | None, ours: dict) -> dict:
    """Keep SageMaker-style steps the engine found; add the profiler's ranks beside them."""
    if not existing or not isinstance(existing.get("Details"), dict):
        return ours
    merged = dict(existing)
    details = dict(existing["Details"])
    steps = dict(details.get("step_details") or {})
    steps.update(ours["Details"]["step_details"])
    details["step_details"] = steps
    merged["Details"] = details
    for key in ("RuleTriggered", "Violations", "Datapoints"):
        merged[key] = int(existing.get(key, 0) or 0) + ours[key]
    return merged


def _merge_problems(path: Path, problems: ProblemLog) -> None:
    if not problems.total and path.is_file():
        return
    existing = _read_json(path) or {}
    merged = ProblemLog()
    for reason, count in (existing.get("by_reason") or {}).items():
        merged.counts[reason] += int(count)
    merged.items = [p for p in (existing.get("problems") or []) if isinstance(p, dict)]
    doc = merged.to_json()
    doc["total"] = doc["total"] + problems.total
    by_reason = dict(doc["by_reason"])
    for reason, count in problems.counts.items():
        by_reason[reason] = by_reason.get(reason, 0) + count
    doc["by_reason"] = dict(sorted(by_reason.items()))
    listed = doc["problems"] + [{"file": p.file, "line": p.line, "reason": p.reason} for p in problems.items]
    doc["problems"] = listed[:200]
    doc["listed"] = len(doc["problems"])
    write_text_atomic(path, json.dumps(doc))


def _add_phases(path: Path, doc: dict) -> None:
    """Steps of each rank as a lane of the timeline's phases (only with epoch-based timestamps)."""
    timeline = _read_json(path)
    if timeline is None:
        return
    phases = timeline.setdefault("phases", {})
    for label, rank in doc["ranks"].items():
        start = rank.get("start_us", 0.0)
        if start < _EPOCH_US_2001 or not rank.get("steps"):
            continue
        spans = [[(start / 1000.0 + s["start_ms"]) / 1000.0, (start / 1000.0 + s["start_ms"] + s["dur_ms"]) / 1000.0]
                 for s in rank["steps"]]
        phases[f"rank-{label}"] = {"ProfilerStep": spans}
    write_text_atomic(path, json.dumps(timeline))


def write_kineto_outputs(files: list[Path], analysis_dir: Path, *, params=None, scheduler: str | None = None,
                         s3=None, stats: list | None = None, client=None, cache=None) -> Path:
    """Analyse ``files`` into ``analysis_dir`` (which may already hold the engine's outputs).

    Writes ``kineto.json``, merges StepOutlier into ``profiler-reports/StepOutlier.json`` and the
    traces' problems into ``data-quality.json``; returns the ``profiler-reports`` folder.
    ``scheduler``, ``s3``, ``client``, ``cache``: see :func:`analyze_job`; ``stats`` receives each task's
    ``TaskStats``.
    """
    return write_kineto_document(files, analysis_dir, params=params, scheduler=scheduler, s3=s3, stats=stats,
                                 client=client, cache=cache)[0]


def write_kineto_document(files: list[Path], analysis_dir: Path, *, params=None, scheduler: str | None = None,
                          s3=None, stats: list | None = None, client=None, cache=None) -> tuple[Path, dict]:
    """:func:`write_kineto_outputs` and the ``kineto.json`` document it wrote, for a caller that then looks into it
    (``pipeline``: does any rank hold an event?) without reading the file back (7 MB over 64 ranks)."""
    analysis_dir = Path(analysis_dir)
    report_dir = analysis_dir / "profiler-reports"
    doc, problems = analyze_traces(files, scheduler=scheduler, s3=s3, stats=stats, client=client, cache=cache)
    write_text_atomic(analysis_dir / KINETO_JSON, json.dumps(doc))
    step_params = (params or {}).get("StepOutlier") if isinstance(params, dict) else None
    rule_path = report_dir / "StepOutlier.json"
    rule = _merge_step_outlier(_read_json(rule_path), step_outlier_rule(doc, step_params))
    write_text_atomic(rule_path, json.dumps(rule))
    _merge_problems(analysis_dir / "data-quality.json", problems)
    if (analysis_dir / "timeline.json").is_file():
        _add_phases(analysis_dir / "timeline.json", doc)
    return report_dir, doc


def with_rule_outputs(rule_dir: Path, analysis_dir: Path) -> Path:
    """Copy existing rule outputs (and the extras beside them) into ``analysis_dir`` so the
    profiler's outputs can be added without touching the user's folder; returns ``analysis_dir``."""
    analysis_dir = Path(analysis_dir)
    target = analysis_dir / "profiler-reports"
    target.mkdir(parents=True, exist_ok=True)
    for path in Path(rule_dir).glob("*.json"):
        shutil.copyfile(path, target / path.name)
    for extra in ("timeline.json", "data-quality.json"):
        source = Path(rule_dir).parent / extra
        if source.is_file():
            shutil.copyfile(source, analysis_dir / extra)
    return analysis_dir
