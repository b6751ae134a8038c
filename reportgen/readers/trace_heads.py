"""What grouping a trace file into its rank needs, kept small beside the file's entry, so a warm run loads no entry.

A job's files are grouped into ranks (``trace_analysis/ranks.group_traces_keyed``) before the rank cache
(``trace_analysis/rank_cache.py``) is asked for their analysis, and the grouping needs only a few things of each
file: its rank number, its label, its first event's start (the cycles' order) and its path; the run's Data quality
needs the problems its read met. Taking them from the file's whole entry meant loading every entry of a warm run
(1.4 GB over 64 x 200 MB: 12.7-43.9 s of wall for 3 CPU s, issue 51). This module keeps them as a head of a few
hundred bytes, under the same key as the file's entry (``trace_cache.file_key``: the content's digest, the path,
the readers' version), so a warm run with every rank kept reads the heads and the ranks' entries, nothing else.

One head is one ``<key>.head.json``: a header line (format, key, SHA-256 of the body) and the body, JSON. It is
written whenever the file's entry is stored or loaded and the head is not there yet, so a cache filled before
heads existed gains them on its next run. A head that is cut, altered, foreign or of another format is removed
and the file read as before: never a wrong grouping. A head and the entry it stands for are made from one read, so
they agree; either may go (the folder's bound) without the other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reportgen.kept_file import read_kept
from reportgen.problems import DataProblem, ProblemLog
from reportgen.readers.trace_cache import TraceCache, put_entry, sealed, take_entry, unsealed
from reportgen.readers.trace_model import TraceColumns

HEAD_FORMAT = 1
HEAD_SUFFIX = ".head.json"


@dataclass(frozen=True)
class FileHead:
    """One file as its rank's grouping sees it (the attributes ``ranks.group_traces_keyed`` reads), and the
    problems its read met."""

    path: Path
    label: str
    rank: int | None
    first_us: float | None  # the first event's start as the columns hold it (None: no event)
    problem_counts: tuple[tuple[str, int], ...]
    problem_items: tuple[tuple[str, int | None, str], ...]

    @property
    def start_us(self) -> np.ndarray:
        """What ``ranks.cycle_order`` reads of the columns: their first start, or nothing."""
        return np.zeros(0, np.float64) if self.first_us is None else np.array([self.first_us], np.float64)

    def problems(self, cap: int) -> ProblemLog:
        """The read's problems as a fresh log of ``cap`` holds them after the read (``job.read_file``)."""
        log = ProblemLog(cap)
        log.counts.update(dict(self.problem_counts))
        log.items = [DataProblem(f, line, reason) for f, line, reason in self.problem_items[:cap]]
        return log


def head_path(cache: TraceCache, key: str) -> Path:
    return cache.folder / f"{key}{HEAD_SUFFIX}"


def has_head(cache: TraceCache, key: str) -> bool:
    return head_path(cache, key).is_file()


def store_head(cache: TraceCache, key: str, trace: TraceColumns, problems: ProblemLog, **fields) -> bool:
    """Keep the head of ``trace`` (read, or loaded from its entry, under ``key``) and its read's ``problems``;
    ``fields``: more of the header (an S3 object's ``content_sha256``, ``trace_analysis/s3_traces.py``)."""
    if not cache.writable:
        return False
    first = float(trace.start_us[0]) if trace.start_us.size else None
    body = json.dumps({"path": str(trace.path), "label": trace.label, "rank": trace.rank, "first_us": first,
                       "problem_counts": [[reason, n] for reason, n in problems.counts.items()],
                       "problem_items": [[p.file, p.line, p.reason] for p in problems.items]},
                      ensure_ascii=True, allow_nan=True).encode("ascii")
    entry = sealed(HEAD_FORMAT, key, body, **fields)
    return put_entry(cache, head_path(cache, key), lambda handle: handle.write(entry))


def load_head(cache: TraceCache, key: str, path: Path) -> FileHead | None:
    """The head kept under ``key`` for the file ``path``, or None: absent, or unusable (then removed)."""
    where = head_path(cache, key)
    return take_entry(cache, where, read_kept(where, cache.max_bytes), lambda raw: _decode(raw, key, path))


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _decode(raw: bytes, key: str, path: Path) -> FileHead | None:
    """A head's contents when it is whole, this key's and this path's, else None."""
    opened = unsealed(raw, HEAD_FORMAT, key)
    if opened is None:
        return None
    try:
        doc = json.loads(opened[1])
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    label, rank, first = doc.get("label"), doc.get("rank"), doc.get("first_us")
    counts, items = doc.get("problem_counts"), doc.get("problem_items")
    if not (doc.get("path") == str(path) and isinstance(label, str) and (rank is None or _is_int(rank))
            and (first is None or isinstance(first, float))
            and isinstance(counts, list) and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                                                 and _is_int(p[1]) for p in counts)
            and isinstance(items, list) and all(isinstance(p, list) and len(p) == 3 and isinstance(p[0], str)
                                                and (p[1] is None or _is_int(p[1])) and isinstance(p[2], str)
                                                for p in items)):
        return None
    return FileHead(path, label, rank, first, tuple((r, n) for r, n in counts),
                    tuple((f, line, reason) for f, line, reason in items))


__all__ = ["HEAD_FORMAT", "HEAD_SUFFIX", "FileHead", "has_head", "head_path", "load_head", "store_head"]
