"""Local resolution: a folder -> the rule outputs, raw profiler data and profiler traces in it (one job only)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from reportgen.errors import InputError
from reportgen.sources.layout import (LAYOUT_FOLDERS, PROFILER_REPORT, RAW_DIR_NAMES, RULE_DIR_NAMES,
                                      RULE_JSON_NAMES, find_traces, traces_named)
from reportgen.sources.resolved import ResolvedSource

END_MARKER = "training_job_end.ts"
_MAX_LOCAL_DEPTH = 6


def _walk(root: Path) -> Iterable[tuple[Path, list[str], list[str]]]:
    base_depth = len(root.parts)
    for dirpath, dirs, files in os.walk(root):
        here = Path(dirpath)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if len(here.parts) - base_depth >= _MAX_LOCAL_DEPTH:
            dirs[:] = []
        yield here, dirs, files


def _has_files(folder: Path) -> bool:
    return any(files for _, _, files in os.walk(folder))


def has_end_marker(raw_dir: Path) -> bool:
    """Whether the raw data holds training_job_end.ts (the job finished writing it)."""
    return any((raw_dir / sub / END_MARKER).is_file() for sub in RAW_DIR_NAMES)


def locate_local(root: Path) -> tuple[Path | None, Path | None]:
    """(folder holding rule JSONs, folder holding system/ and framework/) under ``root``.

    Handles the SageMaker layout (``<job>/rule-output/<Rule>/profiler-output/profiler-reports``,
    ``<job>/profiler-output/system``) and published copies (``ProfilerReport/profiler-output/...``,
    ``profiler-report/``, JSONs directly in ``profiler-output/``).
    """
    rule_candidates: list[tuple[int, int, str, Path]] = []
    raw_candidates: list[tuple[int, str, Path]] = []
    for here, dirs, files in _walk(root):
        rules = [f for f in files if f in RULE_JSON_NAMES]
        if rules:
            preferred = 0 if here.name in RULE_DIR_NAMES else 1
            rule_candidates.append((preferred, -len(rules), str(here), here))
        raw_subdirs = [d for d in dirs if d in RAW_DIR_NAMES and _has_files(here / d)]
        if raw_subdirs:
            raw_candidates.append((len(here.parts), str(here), here))
            dirs[:] = [d for d in dirs if d not in RAW_DIR_NAMES]  # do not descend into raw data
    _refuse_several_jobs(root, [c[3] for c in rule_candidates], [c[2] for c in raw_candidates])
    rule_dir = min(rule_candidates)[3] if rule_candidates else None
    raw_dir = min(raw_candidates)[2] if raw_candidates else None
    return rule_dir, raw_dir


SHOWN_JOBS = 5  # jobs named in the refusal of a folder of several jobs


def _job_key(root: Path, folder: Path) -> str:
    """The job a data folder belongs to: its path under ``root`` up to the first folder of the layout
    (profiler-output, rule-output, profiler-reports, ProfilerReport...); "." for ``root`` itself."""
    parts = []
    for part in folder.relative_to(root).parts:
        if part in LAYOUT_FOLDERS or part in RULE_DIR_NAMES or part.startswith(PROFILER_REPORT):
            break
        parts.append(part)
    return "/".join(parts) or "."


def _refuse_several_jobs(root: Path, rule_dirs: list[Path], raw_dirs: list[Path]) -> None:
    """A folder holding several jobs' data (rule outputs or raw data of more than one job) is refused
    with the jobs found: reporting the first one under the folder's name would be silently wrong."""
    rule_jobs = {_job_key(root, d) for d in rule_dirs}
    raw_jobs = {_job_key(root, d) for d in raw_dirs}
    if len(rule_jobs) <= 1 and len(raw_jobs) <= 1:
        return
    jobs = sorted(rule_jobs | raw_jobs)
    shown = ", ".join(jobs[:SHOWN_JOBS]) + (f" and {len(jobs) - SHOWN_JOBS} more" if len(jobs) > SHOWN_JOBS else "")
    example = next((j for j in jobs if j != "."), jobs[0])
    raise InputError(f"{str(root)!r} holds the profiler data of {len(jobs)} jobs ({shown}): give one job's "
                     f"folder, e.g. {str(root / example)!r}")


def resolve_local(root: Path, *, recompute: bool = False, source: str | None = None) -> ResolvedSource:
    if not root.is_dir():
        raise InputError(f"Local source {str(root)!r} is not a folder.")
    rule_dir, raw_dir = locate_local(root)
    traces = tuple(find_traces(root))
    if rule_dir is None and raw_dir is None and not traces:
        raise InputError(
            f"No profiler data in {str(root)!r}: expected rule outputs (profiler-reports/*.json) "
            "or raw profiler data (system/, framework/) or PyTorch profiler traces (*.pt.trace.json[.gz]) "
            "or JAX / TensorFlow profiler output (plugins/profile/<run>/<host>.xplane.pb)."
        )
    if recompute and raw_dir is None and not traces:  # PyTorch traces are raw data the engine analyses
        raise InputError(f"--recompute needs raw profiler data (system/, framework/) but {str(root)!r} has only rule outputs.")
    parts = []
    if rule_dir is not None:
        parts.append(f"rule outputs in {rule_dir}")
    if raw_dir is not None:
        parts.append(f"raw profiler data in {raw_dir}")
    if traces:
        parts.append(f"{len(traces)} {traces_named(traces)} trace file(s) in {traces[0].parent}")
    return ResolvedSource(
        kind="local",
        rule_output_dir=rule_dir,
        raw_dir=raw_dir,
        job_name=None,
        instance_type=None,
        instance_count=None,
        incomplete=False,
        description="local folder: " + "; ".join(parts),
        downloads=0,
        source=source if source is not None else str(root),
        raw_available=raw_dir is not None,
        end_marker=has_end_marker(raw_dir) if raw_dir is not None else None,
        trace_files=traces,
    )
