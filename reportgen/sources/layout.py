"""Find PyTorch profiler (Kineto) Chrome traces under a folder.

A trace is recognised by name (``*.pt.trace.json`` / ``*.pt.trace.json.gz``) or, for other
``*.json`` / ``*.json.gz`` files, by sniffing the first bytes for a Chrome trace with Kineto's
markers. SageMaker's own ``system/`` and ``framework/`` trees and rule-output folders are skipped:
their JSON files belong to the other readers.
"""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

SKIP_DIRS = frozenset({"system", "framework", "profiler-reports", "profiler-report", "rule-output"})
TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
_SNIFF_BYTES = 64 * 1024
_MARKERS = (b'"schemaVersion"', b'"deviceProperties"', b'"distributedInfo"', b'"cpu_op"', b'"Operator"',
            b'"ProfilerStep#', b'"cuda_runtime"', b'"kernel"')
_MAX_DEPTH = 6


def _head(path: Path) -> bytes:
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as handle:
                return handle.read(_SNIFF_BYTES)
        with open(path, "rb") as handle:
            return handle.read(_SNIFF_BYTES)
    except (OSError, EOFError, zlib.error):
        # A broken file with a trace name is still a trace (the reader records why it is broken).
        return b""


def looks_like_kineto(path: Path) -> bool:
    name = path.name
    if name.endswith(TRACE_SUFFIXES):
        return True
    if not (name.endswith(".json") or name.endswith(".json.gz")):
        return False
    head = _head(path)
    return b'"traceEvents"' in head and any(marker in head for marker in _MARKERS)


def find_traces(root: Path) -> list[Path]:
    """Every Kineto trace file under ``root`` (sorted), not descending into SageMaker's trees."""
    root = Path(root)
    if root.is_file():
        return [root] if looks_like_kineto(root) else []
    found: list[Path] = []
    base = len(root.parts)
    for dirpath, dirs, files in os.walk(root):
        here = Path(dirpath)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        if len(here.parts) - base >= _MAX_DEPTH:
            dirs[:] = []
        for name in sorted(files):
            if name in ("timeline.json", "data-quality.json", "kineto.json", "recording.json", "report.json"):
                continue
            path = here / name
            if path.is_file() and looks_like_kineto(path):
                found.append(path)
    return sorted(found)
